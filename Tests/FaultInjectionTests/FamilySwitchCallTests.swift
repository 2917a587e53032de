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

    /// The call lab with the relay, alice's registrar named by ``registrarName``, `wifi` with `families`.
    static func relayedPhone(_ lab: NetworkLab, families: LinkFamilies) async throws -> CallFaultLab {
        var options = RegistrarOptions()
        options.mediaRelay = true
        return try await CallFaultLab(lab, options: options, registrarName: Self.registrarName, families: families)
    }

    @Test func aCallMovesFromIPv4OnlyToIPv6OnlyAndBackAndStaysUp() async throws {
        try await withNetworkLab { lab in
            let f = try await Self.relayedPhone(lab, families: .ipv4Only)
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

    /// Issue 22 point 4, from the start of a call: a phone on an IPv6-only link registers over
    /// IPv6 (Via and Contact with the bracketed address, RFC 3261 §19.1.1's `IPv6reference`) and
    /// calls sipp, which stays IPv4-only; its offer's `c=IN IP6` (RFC 4566 §5.7) is where the
    /// relay sends, the relay bridges the families, and the far end's media comes back to it
    /// through the relay (netres echoes it).
    @Test func anIPv6OnlyPhoneRegistersAndCallsOverIPv6WithMediaAtTheFarEnd() async throws {
        try await withNetworkLab { lab in
            let f = try await Self.relayedPhone(lab, families: .ipv6Only)
            let address = await lab.addresses(of: f.wifi).ipv6
            let registers = f.registrar.requests().filter { $0.kind == "REGISTERED" }
            #expect(
                !registers.isEmpty && registers.allSatisfy { $0.contact.contains("@[\(address)]:") },
                "\(registers.map(\.contact))")
            let far = try await f.farEnd("uas-relay-call")
            let counter = try await lab.countDatagrams(in: f.server, toPort: far.mediaPort, from: f.registrar.address)
            let id = try await f.placeCall(to: far)
            let offer = try #require(
                f.registrar.requests().first { $0.kind == "INVITE" && $0.user == CallFaultLab.user })
            #expect(offer.fields["src"]?.hasPrefix("\(address):") == true, "over IPv6: \(offer.fields)")
            #expect(try await f.mediaAddress(of: id)?.contains(address) == true, "the phone's media on IPv6")
            let (flowing, count) = await Self.grows(counter, past: 0)
            let relay = (try? await f.registrar.relaySessions()) ?? "no listing"
            #expect(flowing, "media at the far end: \(count); relay: \(relay); netres: \(f.log())")
            #expect(relay.contains(address), "the relay sends to the phone's IPv6 address: \(relay)")
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics()); netres: \(f.log())")
        }
    }
}
