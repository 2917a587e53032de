// The one import a client stack needs: the vocabulary and plugin API, the rules engine and
// policy, the runtime (ResilienceManager), and the netlink monitor.
@_exported public import NetlinkMonitor
@_exported public import ResilienceCore
@_exported public import ResilienceRules
@_exported public import ResilienceRuntime
