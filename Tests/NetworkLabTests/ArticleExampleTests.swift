// The example of the NetworkLab article, compiled and run as written (DocumentationTests checks that
// the article shows this region): a client (here the built `netres run`) behind a carrier loss, an
// address change and a registrar restart against Kamailio.
// doc:begin Sources/NetworkLab/NetworkLab.docc/NetworkLab.md
import Foundation
import NetworkLab
import Testing

@Test(.enabled(if: NetworkLab.isSupported && LabRegistrar.isInstalled), .timeLimit(.minutes(2)))
func clientStaysBoundThroughCarrierLossAddressChangeAndRegistrarRestart() async throws {
    try await withNetworkLab { lab in
        let phone = try await lab.addHost("phone")
        let server = try await lab.addHost("server")
        let wifi = try await lab.connect(phone, to: server, as: "wifi")
        let registrar = try await lab.startRegistrar(in: server)
        let config = lab.directory + "/alice.yaml"
        try """
        control-socket: \(lab.directory)/alice.sock
        interfaces: [wifi]
        hold-down: 0
        accounts: [{name: alice, registrar: \(registrar.address), domain: \(registrar.address), transport: tcp,
                    user: alice, password: secret-alice}]
        """.write(toFile: config, atomically: true, encoding: .utf8)
        // The client: $NETRES, else `netres` beside the test bundle (`swift build --product netres`).
        // A missing one fails here at once: spawn throws naming it.
        let netres = ProcessInfo.processInfo.environment["NETRES"] ?? Bundle.main.bundleURL.path + "/netres"
        try await lab.spawn(in: phone, [netres, "run", "--config", config], output: lab.directory + "/alice.log")
        @Sendable func boundOnceAtCurrentAddress() async throws -> Bool {
            let address = await lab.addresses(of: wifi).ipv4
            let contacts = try await registrar.bindings().map(\.contact)
            return contacts.count == 1 && contacts[0].contains("@\(address):")
        }
        #expect(try await eventually(within: .seconds(10), boundOnceAtCurrentAddress))
        try await lab.inject(.carrierLoss(wifi, for: .seconds(2)))
        try await lab.inject(.addressChange(wifi, .makeBeforeBreak))
        #expect(try await eventually(within: .seconds(10), boundOnceAtCurrentAddress))
        try await registrar.restart()
        #expect(try await eventually(within: .seconds(20), boundOnceAtCurrentAddress))
    }
}
// doc:end
