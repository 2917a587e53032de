import Foundation
import Logging
import ResilienceCore
import ResilienceTesting
import Synchronization
import Testing

@testable import ResilienceDaemon

/// The protocol's edges: what a client may send is bounded and checked, errors name the field,
/// a hello opens a session only once, services belong to one plugin, the event stream reaches
/// `events` clients, and a slow reader costs a bounded queue with a count of what it lost.
@Suite(.timeLimit(.minutes(3)))
struct ExternalPluginProtocolTests {
    @Test func aHelloOfAnotherVersionIsRefusedAndTheSessionClosed() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let client = try await ScriptedExternalPlugin(socket: rig.socket)
            await client.send(type: "hello", #""protocol":2,"plugin":"future""#)
            let refused = try #require(await client.next())
            #expect(refused.type == "error")
            #expect(refused.reason == "protocol: this daemon speaks version 1, not 2")
            #expect(await client.next() == nil, "the session stays open after a refused hello")
        }
    }

    @Test(arguments: [
        (#"{"type":"outcome","id":1,"result":"maybe"}"#, "result: expected succeeded, failed or skipped"),
        (#"{"type":"outcome","result":"succeeded"}"#, "id: missing or not a number"),
        (#"{"type":"teleport"}"#, "type: unknown message type \"teleport\""),
        (#"{"type":"service-added","service":{"id":"a b","kind":"registration"}}"#, "id: expected 1–128 characters"),
        (#"{"type":"service-added","service":{"id":"x","kind":"fax"}}"#, "kind: unknown service kind \"fax\""),
        (#"{"type":"service-removed","service":"bob.registration"}"#, "service: bob.registration is not a service"),
        (#"{"type":"hello","protocol":1}"#, "type: hello comes once, first"),
        ("not json", "not a JSON object"),
    ])
    func aWrongMessageIsAnsweredWithAnErrorNamingTheFieldAndTheSessionGoesOn(line: String, error: String)
        async throws
    {
        let rig = ExternalPluginRig()
        try await rig.run {
            let plugin = try await rig.connect(actions: ["register"])
            await plugin.send(line)
            let answer = try #require(await plugin.next("error"))
            #expect(answer.reason.hasPrefix(error), "\(answer.reason)")
            await plugin.send(type: "command", #""line":"status""#)
            let reply = try #require(await plugin.next("reply"))
            #expect(reply.fields["text"] as? String == "ok status\n")
        }
    }

    @Test func aServiceBelongsToThePluginThatDeclaredItFirst() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let first = try await rig.connect(actions: ["register"])
            let second = try await ScriptedExternalPlugin(socket: rig.socket)
            await second.send(
                type: "hello",
                #""protocol":1,"plugin":"other","services":[{"id":"alice.registration","kind":"registration"},{"id":"bob.registration","kind":"registration","account":"bob"}],"actions":["register"]"#
            )
            let welcome = try #require(await second.next("welcome"))
            #expect(welcome.fields["services"] as? [String] == ["bob.registration"])
            let refused = welcome.fields["refused"] as? [[String: String]]
            #expect(refused?.first?["service"] == "alice.registration")
            #expect(refused?.first?["reason"] == "declared by plugin \"scripted\"")
            // The same plugin twice at once is refused.
            let twin = try await ScriptedExternalPlugin(socket: rig.socket)
            await twin.send(type: "hello", #""protocol":1,"plugin":"scripted""#)
            #expect(try #require(await twin.next()).reason == "plugin: \"scripted\" is connected already")
            _ = first
        }
    }

    @Test func aPushOverAnOpenSessionIsCarriedOutAndAnswered() async throws {
        let rig = ExternalPluginRig()
        try await rig.run {
            let client = try await ScriptedExternalPlugin(socket: rig.socket)
            await client.send(type: "hello", #""protocol":1"#)
            _ = try #require(await client.next("welcome"))
            for index in 0..<3 {
                await client.send(type: "push", #""account":"alice","kind":"call","payload":"p-\#(index)""#)
                #expect(try #require(await client.next("reply")).fields["text"] as? String == "ok push alice\n")
            }
            await client.send(type: "push", #""account":"alice","kind":"sms""#)
            #expect(try #require(await client.next("error")).reason == "kind: expected call, message or refresh")
        }
    }

    @Test func aSlowReaderLosesLinesCountedInPlaceNeverMoreThanTheQueueHolds() async {
        let queue = BoundedLineQueue(capacity: 3) { "dropped \($0)" }
        for index in 1...5 { queue.push("line \(index)") }
        queue.push("line 6")
        var read: [String] = []
        queue.finish()
        while let line = await queue.next() { read.append(line) }
        #expect(read == ["line 1", "line 2", "line 3", "dropped 3"])
        #expect(queue.droppedTotal == 3)

        let later = BoundedLineQueue(capacity: 2) { "dropped \($0)" }
        for index in 1...4 { later.push("line \(index)") }
        #expect(await later.next() == "line 1")
        #expect(await later.next() == "line 2")
        later.push("line 5")
        #expect(await later.next() == "dropped 2")
        #expect(await later.next() == "line 5")
    }
}
