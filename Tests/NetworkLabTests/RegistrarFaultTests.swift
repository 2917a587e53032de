import Foundation
import NetworkLab
import Testing

/// The registrar fixture's SIP-aware faults, seen in its request log and bindings, with the built
/// `netres run` (UDP) as the client and a hand-written in-dialog request.
@Suite(.needsLab, .enabled(if: LabRegistrar.isInstalled, "needs kamailio"), .timeLimit(.minutes(2)))
struct RegistrarFaultTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path

    @Test func a503WithRetryAfterThenALost200AreBothPlayedAndTheClientEndsBound() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let registrar = try await lab.startRegistrar(in: f.server)
            try await registrar.inject(.serviceUnavailable(retryAfter: 1, count: 1))
            try await registrar.inject(.dropNextRegisterOK)
            let config = lab.directory + "/bob.yaml"
            try """
            control-socket: \(lab.directory)/bob.sock
            interfaces: [wifi, cell]
            hold-down: 0
            accounts: [{name: bob, registrar: \(registrar.address), domain: \(registrar.address), user: bob,
                        password: secret-bob}]
            """.write(toFile: config, atomically: true, encoding: .utf8)
            try await lab.spawn(
                in: f.phone, [Self.netres, "run", "--config", config], output: lab.directory + "/bob.log")
            let bound = try await eventually(within: .seconds(30)) {
                try await registrar.bindings().contains { $0.contact.contains("bob@") }
                    && registrar.requests().contains { $0.kind == "REGISTERED" }
            }
            let kinds = registrar.requests().map(\.kind)
            let client = (try? String(contentsOfFile: lab.directory + "/bob.log", encoding: .utf8)) ?? ""
            #expect(bound, "registrar saw \(kinds); netres: \(client.suffix(1200))")
            let unavailable = try #require(kinds.firstIndex(of: "FAULT503"))
            let dropped = try #require(kinds.firstIndex(of: "FAULTDROP200"))
            #expect(unavailable < dropped && dropped < kinds.lastIndex(of: "REGISTERED")!)
            #expect(registrar.requests().first { $0.kind == "FAULT503" }?.fields["retry-after"] == "1")
        }
    }

    @Test func theNextInDialogRequestGets481AndOnlyThatOne() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let registrar = try await lab.startRegistrar(in: f.server)
            try await registrar.inject(.reject481NextInDialog)
            let options = [
                "OPTIONS sip:x@\(registrar.address) SIP/2.0", "Via: SIP/2.0/UDP 198.18.1.2:5999;branch=z9hG4bK1",
                "From: <sip:carol@\(registrar.address)>;tag=a", "To: <sip:x@\(registrar.address)>;tag=b",
                "Call-ID: c1", "CSeq: 1 OPTIONS", "Max-Forwards: 70", "Content-Length: 0", "", "",
            ].joined(separator: "\r\n")
            // One write, so one datagram: `cat` of a file (bash's printf writes line by line).
            let message = lab.directory + "/options.sip"
            try options.write(toFile: message, atomically: true, encoding: .utf8)
            for _ in 0..<2 {
                try await lab.run(in: f.phone, ["bash", "-c", "cat \(message) > /dev/udp/\(registrar.address)/5060"])
            }
            #expect(
                await eventually(within: .seconds(5)) {
                    registrar.requests().filter { $0.kind == "OPTIONS" }.count == 2
                })
            #expect(registrar.requests().filter { $0.kind == "FAULT481" }.map(\.user) == ["carol"])
        }
    }
}
