import Foundation
import NetworkLab
import Testing

/// liblinphone's "family switch", in the relay's suite (``RelayCallFaultTests``, same needs): a
/// call that moves from an IPv4-only Wi-Fi to an IPv6-only link and back stays up. netres
/// (alice's registrar is a name the phone resolves to the registrar's IPv4 and IPv6 addresses)
/// registers first on the new family, then re-INVITEs with the new family's connection address
/// (RFC 3264 §8.3.1: an offer moves a stream to a new address with a new `c=` line); the relay
/// (rtpengine, ``RegistrarOptions/mediaRelay``) bridges to sipp, which stays IPv4-only, and its
/// media still reaches sipp (an nftables count of what the relay delivers to sipp's media port).
/// sipp fails its scenario on anything it does not expect (a 488 we send, a third re-INVITE), so
/// its exit code 0 is the witness that nothing was refused.
extension RelayCallFaultTests {
    static let registrarName = "registrar.netres.test"

    /// Moves `wifi` to `families`, then checks the registrar confirmed a REGISTER whose Contact is
    /// at `address` before the call's re-INVITE reached it, and that media at the far end grows.
    static func move(
        _ f: CallFaultLab, to families: LinkFamilies, at address: String, far: LabSIPp, acks: Int,
        counter: LabDatagramCounter, id: String
    ) async throws {
        let began = realtime()
        try await f.lab.setFamilies(f.wifi, families)
        let reinvited = await eventually(within: .seconds(20)) { far.received("ACK").count >= acks }
        try #require(reinvited, "\(families): no re-INVITE: \(far.diagnostics()); netres: \(f.log())")
        let requests = f.registrar.requests().filter { $0.at >= began }
        let registered = requests.firstIndex { $0.kind == "REGISTERED" && $0.contact.contains(address) }
        let reinvite = requests.firstIndex { $0.kind == "INVITE" && $0.fields["cseq"] != nil }
        let order = requests.map { "\($0.kind) \($0.fields["src"] ?? "") \($0.contact)" }
        #expect(registered != nil && registered! < reinvite ?? -1, "\(families): REGISTER first: \(order)")
        #expect(reinvite.map { requests[$0].fields["src"]?.contains(address) == true } == true, "\(order)")
        let media = try await f.mediaAddress(of: id)
        #expect(media?.contains(address) == true, "\(families): media at \(media ?? "none"), want \(address)")
        let floor = try await counter.packets()
        let (flowing, count) = await Self.grows(counter, past: floor)
        let relay = (try? await f.registrar.relaySessions()) ?? "no listing"
        #expect(flowing, "\(families): media at the far end: \(floor) then \(count); relay: \(relay)")
        #expect(relay.contains(address), "\(families): the relay sends to \(address): \(relay)")
        #expect(try await f.state(of: id) == "active")
    }

    @Test func aCallMovesFromIPv4OnlyToIPv6OnlyAndBackAndStaysUp() async throws {
        try await withNetworkLab { lab in
            var options = RegistrarOptions()
            options.mediaRelay = true
            let f = try await CallFaultLab(
                lab, options: options, registrarName: Self.registrarName, families: .ipv4Only)
            let far = try await f.farEnd("uas-relay-two-reinvites")
            let counter = try await lab.countDatagrams(in: f.server, toPort: far.mediaPort, from: f.registrar.address)
            let id = try await f.placeCall(to: far)
            let (up, before) = await Self.grows(counter, past: 0)
            try #require(up, "no media before the switch: \(before); netres: \(f.log())")
            let addresses = await lab.addresses(of: f.wifi)
            try await Self.move(f, to: .ipv6Only, at: addresses.ipv6, far: far, acks: 2, counter: counter, id: id)
            try await Self.move(f, to: .ipv4Only, at: addresses.ipv4, far: far, acks: 3, counter: counter, id: id)
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics()); netres: \(f.log())")
        }
    }
}
