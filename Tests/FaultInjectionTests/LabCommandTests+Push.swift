import Foundation
import Glibc
import NetworkLab
import Testing

extension LabCommandTests {
    /// The client steps' words reach `netres ctl` and sipp: an account or token that could pass
    /// for an option, or an unknown app state, is refused with its file, line and column.
    @Test func aClientStepWithAnOptionForAnAccountOrAnUnknownStateIsRejectedWhereItStands() async throws {
        let file = try scenario(
            "push: true\ntimeline:\n  - at 1s push-token alice --socket=/tmp/x\n  - at 2s app-state asleep\n")
        defer { unlink(file) }
        let (status, output) = try await netres(["lab", "check", file])
        #expect(status == 1)
        #expect(output.contains("\(file):3:28: error: \"--socket=/tmp/x\" is not a token"), "\(output)")
        let state = try scenario("timeline:\n  - at 2s app-state asleep\n  - at 3s call -x\n")
        defer { unlink(state) }
        let (rejected, message) = try await netres(["lab", "check", state])
        #expect(rejected == 1 && message.contains("\(state):2:21: error: unknown app state \"asleep\""), "\(message)")
    }

    /// The push scenario of `netres lab` as a user writes it: `push: true` makes Kamailio an RFC
    /// 8599 push proxy beside the lab's push service; the built `netres run` (alice, no token at
    /// start, `incoming-calls: answer`, a 2 s wake window) runs in the client host; the timeline
    /// gives it a token, suspends it, calls it and sends it a message. The printed report shows
    /// each push delivered by `netres ctl push` in the client host, the REGISTER it caused before
    /// the call was rung and answered, and the stored message delivered (the client's 2xx to the
    /// proxy's relay). Scaled down: 18 s in all; every bound is a hang guard.
    @Test(.enabled(if: LabRegistrar.isInstalled && LabSIPp.isInstalled, "needs kamailio and sipp: SKIPPED"))
    func aSuspendedClientIsWokenByPushesForACallAndAMessageInAScenario() async throws {
        let folder = NSTemporaryDirectory() + "netres-lab-push-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try "version: 1\npush-wake-window: 2s\n".write(
            toFile: folder + "/policy.yaml", atomically: true, encoding: .utf8)
        let registrar = LabAddress.service4
        try """
        control-socket: \(folder)/netres.sock
        interfaces: [wifi]
        hold-down: 0
        state-directory: \(folder)/state
        policy: \(folder)/policy.yaml
        accounts: [{name: alice, registrar: \(registrar), domain: \(registrar), transport: udp, user: alice,
                    password: secret-alice, incoming-calls: answer,
                    push: {provider: apns, token-file: \(folder)/alice.token}}]

        """.write(toFile: folder + "/netres.yaml", atomically: true, encoding: .utf8)
        let file = try scenario(
            """
            push: true
            control-socket: \(folder)/netres.sock
            links: [wifi]
            duration: 18s
            timeline:
              - at 2s push-token alice f00dcafe
              - at 4s app-state suspended
              - at 6s call alice for 8s
              - at 12s message alice for 5s
            """)
        defer { unlink(file) }
        let (status, output) = try await netres([
            "lab", "run", file, "--", Self.netres, "run", "--config", folder + "/netres.yaml",
        ])
        #expect(status == 0, "stopped at the end of the duration: \(output.suffix(3000))")
        #expect(output.contains("push-token alice: "), "\(output.suffix(3000))")
        #expect(output.contains("app-state suspended: ") && !output.contains("app-state suspended: failed"))
        #expect(output.contains("release-flow alice"), "suspended, alice's flow was released")
        let lines = output.split(separator: "\n").map(String.init)
        func first(_ text: String, after start: Int = 0) -> Int? {
            lines.indices.first { $0 >= start && lines[$0].contains(text) }
        }
        // RFC 8599 §4.1: the proxy pushes, the device registers, then the proxy forwards the request.
        let pushed = try #require(first("registrar: PUSH kind=call"), "no call push: \(output.suffix(3000))")
        let registered = try #require(first("registrar: REGISTERED", after: pushed), "no REGISTER after the push")
        #expect(first("call alice: rung (180) after", after: registered) != nil, "\(output.suffix(3000))")
        #expect(output.contains("answered (200) after"))
        #expect(output.contains("push service: call push for alice: delivered"))
        let stored = try #require(first("registrar: PUSH kind=message"), "no message push: \(output.suffix(3000))")
        #expect(first("registrar: DELIVERED", after: stored) != nil, "the client answered the relayed MESSAGE")
        #expect(output.contains("message alice: stored by the registrar (202), delivered to the client after"))
        #expect(output.contains("push service: message push for alice: delivered"))
    }
}
