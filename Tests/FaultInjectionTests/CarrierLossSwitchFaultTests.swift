import Foundation
import NetworkLab
import Testing

/// Wi-Fi (metric 100) loses its carrier beside a healthy cellular link (metric 200). The kernel
/// keeps Wi-Fi's default route, flagged `linkdown`, and still routes by it
/// (`net.ipv4.conf.all.ignore_routes_with_linkdown` is 0), while the path moves to cellular
/// (`changed(interface-switched)`): the flows must leave over the link the path chose, or the
/// REGISTER from the cellular address goes out of a link without carrier and nothing reaches the
/// registrar until the carrier is back.
///
/// The built `netres run` (alice, hold-down 0, `incoming-calls: answer`) against Kamailio; sipp
/// calls through the registrar. The registrar's request log (CLOCK_REALTIME) is compared with the
/// lab's own record of the moment it starts giving the carrier back (``LabEvent/realtime``), so
/// "during the loss" is an order of two instants, never a duration.
@Suite(
    .serialized, .needsNamespaces,
    .enabled(if: LabRegistrar.isInstalled && LabSIPp.isInstalled, "needs kamailio and sipp"),
    .timeLimit(.minutes(3)))
struct CarrierLossSwitchFaultTests {
    static let netres = Bundle.main.bundleURL.appendingPathComponent("netres").path
    static let user = "alice"

    /// RFC 3261 §10.2.4: "a UA SHOULD refresh its binding ... the UA MAY also use ... REGISTER to
    /// add, remove or modify bindings" when its address changes; here the address the path chose
    /// changes with the link, so the REGISTER must reach the registrar from that link while the
    /// other one is still without carrier, and a call placed meanwhile finds the new binding.
    @Test(arguments: ["udp", "tcp", "tls"])
    func wifiWithoutCarrierMovesTheFlowsToCellularAndBackOnTheWire(transport: String) async throws {
        try await withNetworkLab { lab in
            let phone = try await lab.addHost("phone")
            let server = try await lab.addHost("server")
            let wifi = try await lab.connect(phone, to: server, as: "wifi")
            let cellular = try await lab.connect(phone, to: server, as: "cellular", metric: 200)
            var options = RegistrarOptions()
            var tlsLine = ""
            if transport == "tls" {
                let tls = try await RegistrarTLS(directory: lab.directory, server: .valid)
                options = RegistrarOptions(tlsConfiguration: tls.kamailioConfiguration)
                tlsLine = ", tls: {ca-file: \(tls.caFile), server-name: \(RegistrarTLS.serverName)}"
            }
            let registrar = try await lab.startRegistrar(in: server, options: options)
            let config = lab.directory + "/netres.yaml"
            try """
            control-socket: \(lab.directory)/netres.sock
            interfaces: [wifi, cellular]
            hold-down: 0
            accounts: [{name: \(Self.user), registrar: \(registrar.address), domain: \(registrar.address),
                        transport: \(transport), user: \(Self.user), password: secret-\(Self.user),
                        incoming-calls: answer\(tlsLine)}]

            """.write(toFile: config, atomically: true, encoding: .utf8)
            let log = lab.directory + "/netres.log"
            try await lab.spawn(in: phone, [Self.netres, "run", "--config", config], output: log)
            let wifiAddress = await lab.addresses(of: wifi).ipv4
            let cellularAddress = await lab.addresses(of: cellular).ipv4
            @Sendable func boundOnce(at address: String) async throws -> Bool {
                let contacts = try await registrar.bindings().map(\.contact).filter { $0.contains("\(Self.user)@") }
                return contacts.count == 1 && isContact(contacts[0], of: Self.user, at: address)
            }
            @Sendable func witness() -> String {
                let requests = registrar.requests().map { "\($0.kind) \($0.fields["src"] ?? $0.contact) \($0.at)" }
                let tail = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").suffix(2500)
                return "registrar: \(requests.suffix(20)); netres: \(tail)"
            }
            let up = try await eventually(within: .seconds(30)) { try await boundOnce(at: wifiAddress) }
            try #require(up, "alice not bound over wifi: \(witness())")

            // The lab's 3 s carrier loss: the REGISTER from cellular and its binding while it holds.
            let lossBegan = realtime()
            let loss = Fault.carrierLoss(wifi, for: .seconds(3))
            try await lab.inject(loss)
            let restoring = try #require(await Self.instant(of: "\(loss): restoring", in: lab))
            let fromCellular = registrar.requests().filter {
                $0.kind == "REGISTER" && $0.user == Self.user && $0.at >= lossBegan
                    && $0.fields["src"]?.hasPrefix("\(cellularAddress):") == true
            }
            let boundOnCellular = registrar.requests().filter {
                $0.kind == "REGISTERED" && $0.at >= lossBegan
                    && isContact($0.contact, of: Self.user, at: cellularAddress)
            }
            #expect(
                fromCellular.first.map { $0.at < restoring } == true,
                "the REGISTER over cellular reached the registrar before the carrier came back: \(witness())")
            #expect(
                boundOnCellular.first.map { $0.at < restoring } == true,
                "alice was bound at the cellular address while wifi had no carrier: \(witness())")
            let back = try await eventually(within: .seconds(30)) { try await boundOnce(at: wifiAddress) }
            #expect(back, "the binding returned to wifi once its carrier was back: \(witness())")

            // A call placed while wifi has no carrier is answered (over cellular, where alice is bound).
            let secondLoss = Fault.carrierLoss(wifi, for: .seconds(10))
            let secondBegan = realtime()
            async let held: FaultBackend = lab.inject(secondLoss)
            let moved = await eventually(within: .seconds(9)) {
                registrar.requests().contains {
                    $0.kind == "REGISTERED" && $0.at >= secondBegan
                        && isContact($0.contact, of: Self.user, at: cellularAddress)
                }
            }
            let reach = try await lab.call(Self.user, through: registrar, from: server, within: .seconds(8))
            _ = try await held
            let secondRestoring = try #require(await Self.instant(of: "\(secondLoss): restoring", in: lab, last: true))
            let invite = registrar.requests().first {
                $0.kind == "INVITE" && $0.at >= secondBegan && $0.fields["to"] == Self.user
            }
            #expect(moved, "alice bound over cellular in the second loss: \(witness())")
            #expect(reach.answered != nil, "the call placed while wifi had no carrier was answered: \(witness())")
            #expect(
                invite.map { $0.at < secondRestoring } == true,
                "the call was placed while wifi had no carrier: \(witness())")
            let returned = try await eventually(within: .seconds(30)) { try await boundOnce(at: wifiAddress) }
            #expect(returned, "the binding returned to wifi after the second loss: \(witness())")
        }
    }

    /// CLOCK_REALTIME of the lab's event named `what` (the first, or with `last` the latest).
    static func instant(of what: String, in lab: NetworkLab, last: Bool = false) async -> Double? {
        let matching = await lab.events().filter { $0.what == what }
        return (last ? matching.last : matching.first)?.realtime
    }
}
