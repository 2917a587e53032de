import ResilienceCore
import SIPPlugin

// doc:begin Plugins/SIPPlugin/SIPPlugin.docc/SIPPlugin.md
func placeAndAnswerCalls(plugin: SIPPlugin, myMedia: some MediaSession, path: NetworkPath) async throws {  // doc:hidden
    let agent = plugin.agent(for: "alice")!
    Task {
        for await event in agent.callEvents {
            if event.phase == .incoming { try await agent.answer(event.call, media: myMedia, path: path) }
            print(event.call, event.phase, event.trigger)
        }
    }
    let call = try await agent.placeCall(to: "sip:bob@example.com", media: myMedia, path: path)
    try await agent.hold(call, path: path)  // re-INVITE a=sendonly
    try await agent.resume(call, path: path)  // re-INVITE a=sendrecv
    try await agent.hangUp(call, path: path)  // BYE (CANCEL while still ringing)
}  // doc:hidden
// doc:end
