import ResilienceCore
import SIPPlugin

// doc:begin Plugins/SIPPlugin/SIPPlugin.docc/SIPPlugin.md
func placeAndAnswerCalls(plugin: SIPPlugin, myMedia: some MediaSession, path: NetworkPath) async throws {  // doc:hidden
    let events = plugin.callEvents(of: "alice")!
    Task {
        for await event in events {
            if event.phase == .alerting {
                try await plugin.answer(event.call, account: "alice", media: myMedia, path: path)
            }
            print(event.call, event.phase, event.trigger)
        }
    }
    let call = try await plugin.placeCall(account: "alice", to: "sip:bob@example.com", media: myMedia, path: path)
    try await plugin.hold(call, account: "alice", path: path)  // re-INVITE a=sendonly
    try await plugin.resume(call, account: "alice", path: path)  // re-INVITE a=sendrecv
    try await plugin.hangUp(call, account: "alice", path: path)  // BYE (CANCEL while still ringing)
}  // doc:hidden
// doc:end
