import ResilienceCore
import Testing

/// A push comes from a provider or a control socket: hostile until ``Push`` has checked it.
struct PushTests {
    @Test func aWellFormedPushKeepsItsAccountKindAndPayload() throws {
        let push = try Push(account: "alice", kind: .message, payload: "msg 42\tfrom bob")
        #expect(push.account == "alice")
        #expect(push.kind == .message)
        #expect(push.payload == "msg 42\tfrom bob")
        #expect(Trigger.push(push).name == "push.received.message")
        #expect(try Push(account: "alice").kind == .call)
    }

    @Test(arguments: ["", "al ice", "alice\n", "a\u{1B}[31m", String(repeating: "a", count: 65)])
    func anAccountThatIsEmptyTooLongOrHasSpacesOrControlsIsRefused(account: String) {
        #expect(throws: PushProblem.self) { try Push(account: account) }
    }

    @Test(arguments: ["line\nforged", "cr\rhere", "esc\u{1B}", "nul\0", "sep\u{2028}", "c1\u{85}"])
    func aPayloadWithAControlCharacterIsRefused(payload: String) {
        #expect(throws: PushProblem.self) { try Push(account: "alice", payload: payload) }
    }

    @Test func aPayloadLongerThanTheLimitIsRefusedAndOneAtTheLimitKept() throws {
        let limit = Push.maximumPayloadLength
        #expect(throws: PushProblem.self) {
            try Push(account: "alice", payload: String(repeating: "x", count: limit + 1))
        }
        #expect(try Push(account: "alice", payload: String(repeating: "x", count: limit)).payload?.utf8.count == limit)
        // Counted in bytes, not characters: 513 two-byte characters are 1026 bytes.
        #expect(throws: PushProblem.self) { try Push(account: "alice", payload: String(repeating: "é", count: 513)) }
    }
}
