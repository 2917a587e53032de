import Foundation
import NetworkLab
import Testing

/// Calls whose media goes through rtpengine (``RegistrarOptions/mediaRelay``): netres in the
/// phone host, Kamailio rewriting every SDP of the call, sipp as the far end beside them. The
/// witness that media reaches the far end through the relay is an nftables counter of the
/// datagrams the relay's address delivers to sipp's media port (sipp plays RTP to the relay, the
/// relay to netres, netres echoes it back, the relay forwards the echo to sipp).
@Suite(
    .enabled(if: NetworkLab.isSupported, "needs root and iproute2: SKIPPED"),
    .enabled(
        if: LabRegistrar.isInstalled && LabSIPp.isInstalled && LabMediaRelay.isInstalled,
        "needs kamailio, sipp and rtpengine: SKIPPED"),
    .timeLimit(.minutes(2)))
struct RelayCallFaultTests {
    /// Waits (hang guard 15 s) until the counter passed `floor` by more than 20 datagrams; the count.
    static func grows(_ counter: LabDatagramCounter, past floor: Int) async -> (Bool, Int) {
        let grew = await eventually(within: .seconds(15)) { ((try? await counter.packets()) ?? 0) > floor + 20 }
        return (grew, (try? await counter.packets()) ?? -1)
    }

    @Test func mediaThroughTheRelayReachesTheFarEndAfterAFlapAndAfterAnAddressChange() async throws {
        try await withNetworkLab { lab in
            var options = RegistrarOptions()
            options.mediaRelay = true
            let f = try await CallFaultLab(lab, options: options)
            let far = try await f.farEnd("uas-relay-two-reinvites")
            let counter = try await lab.countDatagrams(in: f.server, toPort: far.mediaPort, from: f.registrar.address)
            let id = try await f.placeCall(to: far)
            let invite = try #require(far.received("INVITE").first)
            let phone = await lab.addresses(of: f.wifi).ipv4
            #expect(invite.connectionAddress == f.registrar.address, "the relay's c=, not \(phone): \(invite.text)")
            let (first, before) = await Self.grows(counter, past: 0)
            let relayed = (try? await f.registrar.relaySessions()) ?? "no listing"
            try #require(first, "no media through the relay: \(before); relay: \(relayed); netres: \(f.log())")

            try await lab.inject(.carrierLoss(f.wifi, for: .seconds(3)))
            let reinvited = await eventually(within: .seconds(20)) { far.received("ACK").count >= 2 }
            try #require(reinvited, "no re-INVITE after the flap: \(far.diagnostics()); netres: \(f.log())")
            let afterFlap = try await counter.packets()
            let (flowing, count) = await Self.grows(counter, past: afterFlap)
            #expect(flowing, "media at the far end after the flap: \(afterFlap) then \(count)")

            try await lab.inject(.addressChange(f.wifi, .makeBeforeBreak))
            let new = await lab.addresses(of: f.wifi).ipv4
            let moved = await eventually(within: .seconds(20)) { far.received("ACK").count >= 3 }
            try #require(moved, "no re-INVITE after the move: \(far.diagnostics()); netres: \(f.log())")
            let afterMove = try await counter.packets()
            let (followed, total) = await Self.grows(counter, past: afterMove)
            let sessions = (try? await f.registrar.relaySessions()) ?? "no listing"
            #expect(followed, "media at the far end after the move: \(afterMove) then \(total); relay: \(sessions)")
            #expect(sessions.contains(new), "the relay sends to the new address \(new): \(sessions)")
            #expect(try await f.mediaAddress(of: id)?.hasPrefix("\(new):") == true)
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics()); netres: \(f.log())")
        }
    }
}
