import Logging
import SIPPlugin

extension Daemon {
    /// The process continues after a stop (SIGCONT after SIGSTOP, a debugger, a frozen cgroup).
    ///
    /// While it was stopped, time went on for everyone else: a notifier whose NOTIFY went
    /// unanswered for its transaction timeout (Kamailio's 30 s) drops the subscription, a
    /// registrar's binding may expire, and nothing on the wire tells the client afterwards. So
    /// nothing is assumed: every bound account registers again and every established
    /// subscription is refreshed (recreated when the notifier answers 481), through the runtime's
    /// `flow.lost` path (registration first, paced, the loss throttle against repeats). What fell
    /// due during the stop was due anyway: the timers fire as soon as the process runs.
    public func processContinued() async {
        logger.notice("process continued after a stop; checking bindings and subscriptions")
        await plugin.processContinued()
    }
}
