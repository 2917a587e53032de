import ResilienceCore
import ResilienceHooks
import ResilienceRuntime
import SIPPlugin
import ServiceLifecycle

extension Daemon {
    /// Answers the call commands of the control socket (`call`, `answer`, `hangup`, `hold`,
    /// `resume`, `interruption`, `calls`). Replies: `ok call ID`, `ok hold ID held`,
    /// `ok interruption begin`, the call listing, or `error: ...`.
    func handleCall(_ command: ControlCommand) async -> String {
        do {
            switch command {
            case .call(let account, let uri):
                return "ok call \(try await calls.place(account: account, uri: uri))\n"
            case .callControl(let control, let id):
                let phase = try await calls.control(control, id: CallID(id))
                return "ok \(control.rawValue) \(id) \(phase.rawValue)\n"
            case .interruption(let begins):
                if begins { await manager.beginInterruption() } else { await manager.endInterruption() }
                return "ok interruption \(begins ? "begin" : "end")\n"
            case .calls(let json):
                let records = await calls.records()
                return (json ? CallsReport.json(records) : CallsReport.human(records)) + "\n"
            case .state, .status, .pushToken, .push, .messages:
                return "error: not a call command\n"
            }
        } catch {
            return "error: \(error)\n"
        }
    }

    /// One call event of `account`: into the desk and the metrics, and unless the throttle holds
    /// it back (``CallEventThrottle``), the log and the hooks.
    func callEvent(_ event: CallEvent, account: SIPAccount) async {
        await calls.observe(event, account: account)
        metrics?.observe(call: event)
        guard case .log(let heldBack) = callEventThrottle.admit(event) else { return }
        await output(
            CallEventLine(clock: WallClock(), json: config.logFormat == .json)
                .render(event, account: account, heldBack: heldBack))
        hooks?.submit(
            environment: HookEnvironment.variables(
                ofCall: HookEnvironment.Call(
                    id: event.call.rawValue, account: account.name, peer: event.peer, state: event.phase.rawValue,
                    direction: event.direction.rawValue, trigger: event.trigger, reason: event.reason ?? "",
                    downtime: event.downtime, heldBack: heldBack),
                clock: WallClock()))
    }

    /// A `reinvite-call` action (the policy's recovery of a call after a network change) that did
    /// not succeed becomes the call's last recovery in `netres ctl calls`; a success is the
    /// agent's recovery event, with its measurements (``CallDesk/observe(_:account:)``).
    func recordRecovery(_ action: ActionEvent) async {
        guard action.action.kind == .reinviteCall, action.outcome != .started, action.outcome != .succeeded else {
            return
        }
        let text = "\(action.action.kind.rawValue) \(action.outcome.label) at \(WallClock().rfc3339(action.at))"
        await calls.recordRecovery(text, of: action.action.service)
    }
}

/// Follows every account's call events and MESSAGEs (``Daemon/messageReceived(_:)``) for the
/// daemon until graceful shutdown (the agents' streams never end on their own; without
/// accounts it only waits, since a service group treats an early return as a failure).
struct CallFollower: Service {
    let daemon: Daemon

    func run() async throws {
        await withDiscardingTaskGroup { group in
            for entry in daemon.config.accounts {
                if let events = daemon.plugin.callEvents(of: entry.account.name) {
                    group.addTask {
                        for await event in events.cancelOnGracefulShutdown() {
                            await daemon.callEvent(event, account: entry.account)
                        }
                    }
                }
                if let messages = daemon.plugin.messages(of: entry.account.name) {
                    group.addTask {
                        for await message in messages.cancelOnGracefulShutdown() {
                            await daemon.messageReceived(message)
                        }
                    }
                }
            }
        }
        try? await gracefulShutdown()
    }
}
