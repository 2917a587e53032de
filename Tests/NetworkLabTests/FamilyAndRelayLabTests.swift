import Foundation
import NetworkLab
import Testing

/// A link left IPv4-only or IPv6-only, a host's own host names, and the media relay started and
/// stopped with the registrar.
@Suite(.needsLab, .timeLimit(.minutes(2)))
struct FamilyAndRelayLabTests {
    @Test func aLinkGoesIPv6OnlyThenIPv4OnlyAndAHostNameResolvesOnlyInItsHost() async throws {
        var folder = ""
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let a = await lab.addresses(of: f.wifi)
            try await lab.setFamilies(f.wifi, .ipv6Only)
            var shown = try await f.phoneIP("-o address show dev wifi")
            #expect(!shown.contains(" inet ") && shown.contains("inet6 \(a.ipv6)/64"), "\(shown)")
            #expect(try await f.phoneIP("-6 route show default").contains("via \(a.gateway6) dev wifi"))
            try await lab.setFamilies(f.wifi, .ipv4Only)
            shown = try await f.phoneIP("-o address show dev wifi")
            #expect(shown.contains("inet \(a.ipv4)/24") && !shown.contains(a.ipv6), "\(shown)")
            #expect(try await f.phoneIP("-4 route show default").contains("via \(a.gateway4) dev wifi"))

            let name = "registrar.netres.test"
            try await lab.setHostNames(in: f.phone, [name: [LabAddress.service4, LabAddress.service6]])
            let resolved = try await lab.run(in: f.phone, ["getent", "ahosts", name])
            #expect(resolved.contains(LabAddress.service4) && resolved.contains(LabAddress.service6), "\(resolved)")
            let elsewhere = try? await lab.run(in: f.server, ["getent", "ahosts", name])
            #expect(elsewhere == nil, "the server host does not know the name: \(elsewhere ?? "")")
            await #expect(throws: NetworkLabError.self) { try await lab.setHostNames(in: f.phone, ["a b": ["::1"]]) }
            await #expect(throws: NetworkLabError.self) {
                try await lab.setHostNames(in: f.phone, [name: ["not-an-address"]])
            }
            folder = "/etc/netns/" + f.phone.namespace
            #expect(FileManager.default.fileExists(atPath: folder + "/hosts"))
        }
        #expect(!folder.isEmpty && !FileManager.default.fileExists(atPath: folder), "removed with the lab")
    }

    @Test(.enabled(if: LabRegistrar.isInstalled && LabMediaRelay.isInstalled, "needs kamailio and rtpengine"))
    func theMediaRelayStartsBeforeTheRegistrarAndStopsWithIt() async throws {
        try await withNetworkLab { lab in
            let server = try await lab.addHost("server")
            var options = RegistrarOptions()
            options.mediaRelay = true
            let registrar = try await lab.startRegistrar(in: server, options: options)
            #expect(registrar.relay != nil)
            #expect(try await registrar.relaySessions().contains("No sessions"))
            let config = try String(contentsOfFile: lab.directory + "/registrar-server/kamailio.cfg", encoding: .utf8)
            #expect(config.contains("loadmodule \"rtpengine.so\"") && config.contains("branch_route[RELAY_MEDIA]"))
            #expect(!config.contains("@RELAY_"), "every placeholder filled")
            await registrar.stop()
            await #expect(throws: NetworkLabError.self) { try await registrar.relaySessions() }
            let plain = try await lab.startRegistrar(in: try await lab.addHost("plain"))
            #expect(plain.relay == nil)
            let text = try String(contentsOfFile: lab.directory + "/registrar-plain/kamailio.cfg", encoding: .utf8)
            #expect(!text.contains("rtpengine") && text.contains("# @RELAY_CALLS@"), "no relay: comments only")
        }
    }
}
