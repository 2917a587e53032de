import Foundation
import NetworkLab
import Testing

/// Calls placed with `netres ctl call` (the built `netres run` in a lab's phone host) to sipp
/// behind Kamailio, through real kernel faults. Witnesses: sipp's message log (what reached the
/// far end, with its own checks on our SDP: exit code 0), the registrar's request log (order of
/// the REGISTER's confirmation and the re-INVITE), and `netres ctl calls`.
///
/// Each test has its own lab, so the cells run in parallel; every bound below is a hang guard.
@Suite(
    .enabled(if: NetworkLab.isSupported, "needs root and iproute2: SKIPPED"),
    .enabled(if: LabRegistrar.isInstalled && LabSIPp.isInstalled, "needs kamailio and sipp: SKIPPED"),
    .timeLimit(.minutes(2)))
struct CallFaultTests {
    /// A 3 s carrier loss: the call survives with one re-INVITE (same Call-ID, higher CSeq) that
    /// the registrar sees only after it confirmed the REGISTER that followed the outage.
    @Test func aCallSurvivesAThreeSecondFlapWithOneReinviteAfterTheRegister() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-one-reinvite")
            let id = try await f.placeCall(to: far)
            let began = realtime()
            try await lab.inject(.carrierLoss(f.wifi, for: .seconds(3)))
            let reinvited = await eventually(within: .seconds(20)) { far.received("INVITE").count >= 2 }
            try #require(reinvited, "no re-INVITE: \(far.diagnostics()); netres: \(f.log())")
            let invites = far.received("INVITE")
            #expect(invites[1].header("Call-ID") == invites[0].header("Call-ID"))
            #expect((invites[1].cseq ?? 0) > (invites[0].cseq ?? 0))
            let callID = invites[0].header("Call-ID") ?? "?"
            let requests = f.registrar.requests().filter { $0.at >= began }
            let registered = requests.firstIndex { $0.kind == "REGISTERED" }
            let reinvites = requests.indices.filter {
                requests[$0].kind == "INVITE" && requests[$0].fields["callid"] == callID
            }
            #expect(reinvites.count == 1, "INVITEs after the flap: \(reinvites.count)")
            #expect(registered != nil && registered! < reinvites.first ?? -1, "order: \(requests.map(\.kind))")
            #expect(try await f.state(of: id) == "active")
            // sipp plays RTP again after the re-INVITE's ACK: media reaches us after the flap.
            let before = await f.packets(of: id)
            let flowing = await eventually(within: .seconds(10)) { await f.packets(of: id) > before + 20 }
            let after = await f.packets(of: id)
            #expect(flowing, "RTP after the flap: \(before) then \(after)")
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics())")
        }
    }

    /// An address change: the re-INVITE carries the new address in Contact and `c=`, and RTP from
    /// the far end (sipp plays it again to the re-offered address) is counted at the new address.
    @Test func aCallMovesToTheNewAddressAndMediaFollows() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-one-reinvite")
            let id = try await f.placeCall(to: far)
            let old = await lab.addresses(of: f.wifi).ipv4
            let heard = await eventually(within: .seconds(10)) { await f.packets(of: id) > 0 }
            #expect(heard, "no RTP before the move")
            let began = realtime()
            try await lab.inject(.addressChange(f.wifi, .makeBeforeBreak))
            let new = await lab.addresses(of: f.wifi).ipv4
            try #require(new != old)
            // An address change is a burst (IPv4, then IPv6, a few ms apart); each change plans
            // register → reinvite-call, and the far end must see one re-INVITE (sipp fails on a
            // second), its 2xx ACKed, after the REGISTER from the new address was confirmed.
            let reinvited = await eventually(within: .seconds(20)) { far.received("ACK").count >= 2 }
            let relayed = f.registrar.requests().map { "\($0.kind) \($0.fields["cseq"] ?? "")" }
            try #require(reinvited, "no re-INVITE: \(far.diagnostics()); registrar: \(relayed); netres: \(f.log())")
            let reinvite = far.received("INVITE")[1]
            #expect(reinvite.header("Contact")?.contains("@\(new):") == true, "\(reinvite.text)")
            #expect(reinvite.connectionAddress == new, "\(reinvite.text)")
            let before = await f.packets(of: id)
            let grew = await eventually(within: .seconds(10)) { await f.packets(of: id) > before + 20 }
            let after = await f.packets(of: id)
            #expect(grew, "RTP at the new address: \(before) then \(after)")
            let address = try await f.mediaAddress(of: id)
            let listing = try await f.ctl("calls")
            #expect(address?.hasPrefix("\(new):") == true, "media at \(address ?? "none"), want \(new); \(listing)")
            let requests = f.registrar.requests().filter { $0.at >= began }
            let registered = requests.firstIndex { $0.kind == "REGISTERED" && $0.contact.contains("@\(new):") }
            let reinviteAt = requests.firstIndex { $0.kind == "INVITE" }
            #expect(registered != nil && registered! < reinviteAt ?? -1, "order: \(requests.map(\.kind))")
            #expect(requests.filter { $0.kind == "INVITE" }.count == 1, "one re-INVITE: \(requests.map(\.kind))")
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics()); netres: \(f.log())")
        }
    }

    /// An interruption holds the call (`sendonly`, checked by sipp) and its end resumes it (`sendrecv`).
    @Test func anInterruptionHoldsTheCallAndItsEndResumesIt() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-hold-resume")
            let id = try await f.placeCall(to: far)
            try await f.ctl("interruption", "begin")
            #expect(await eventually(within: .seconds(10)) { far.received("ACK").count >= 2 })
            #expect(try await f.state(of: id) == "held")
            try await f.ctl("interruption", "end")
            #expect(await eventually(within: .seconds(10)) { far.received("ACK").count >= 3 })
            #expect(try await f.state(of: id) == "active")
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics())")
        }
    }

    /// A call the far end holds stays held through an interruption and its end: nothing we send
    /// offers `sendrecv` again (sipp answers any re-INVITE `inactive`; its log is the witness).
    @Test func aCallTheFarEndHeldIsNotResumedWhenTheInterruptionEnds() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-remote-hold-interruption")
            let id = try await f.placeCall(to: far)
            #expect(await eventually(within: .seconds(10)) { (try? await f.state(of: id)) == "remotely-held" })
            try await f.ctl("interruption", "begin")
            try await Task.sleep(for: .seconds(1))
            try await f.ctl("interruption", "end")
            try await Task.sleep(for: .seconds(2))
            let ours = far.received("INVITE").dropFirst()
            #expect(ours.allSatisfy { !$0.text.contains("a=sendrecv") }, "\(ours.map(\.text))")
            #expect(try await f.state(of: id) == "remotely-held")
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics())")
        }
    }

    /// Glare: sipp sends its own re-INVITE while ours is pending (we answer 491), then answers ours
    /// 491; we retry after RFC 3261 §14.1's wait (at least 2.1 s: we own the Call-ID) and the call
    /// ends up held, alive.
    @Test func glareIsAnswered491AndOurReinviteIsRetried() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-glare")
            let id = try await f.placeCall(to: far)
            // `ctl hold` returns when the hold is answered: after the glare and the retry.
            let held = try? await f.ctl("hold", id)
            let retried = await eventually(within: .seconds(15)) { far.received("INVITE").count >= 3 }
            #expect(retried, "ctl hold: \(held ?? "no reply"); sipp: \(far.diagnostics()); netres: \(f.log())")
            let messages = far.messages()
            let glare = messages.first { $0.sent && $0.status == 491 }
            let retry = far.received("INVITE").dropFirst(2).first
            #expect(messages.contains { !$0.sent && $0.status == 491 }, "we answered sipp's re-INVITE 491")
            if let glare, let retry { #expect(retry.at - glare.at >= 2.0, "retried \(retry.at - glare.at) s after") }
            #expect(await eventually(within: .seconds(5)) { (try? await f.state(of: id)) == "held" })
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics())")
        }
    }

    /// The far end lost the call during the outage: 481 to our re-INVITE ends the call here
    /// (gone from `ctl calls`) and no BYE follows (sipp's scenario fails on one; the log counts).
    @Test func a481ToTheReinviteAfterAFlapEndsTheCallWithoutBye() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-481")
            let id = try await f.placeCall(to: far)
            try await lab.inject(.carrierLoss(f.wifi, for: .seconds(3)))
            #expect(await eventually(within: .seconds(20)) { (try? await f.state(of: id)) == nil })
            #expect(await far.exitCode(within: .seconds(20)) == 0, "sipp: \(far.diagnostics())")
            #expect(far.received("BYE").isEmpty)
            #expect(far.received("INVITE").count == 2)
        }
    }

    /// A carrier loss longer than the policy's call survival budget (1 s here): on the path's
    /// return the call is ended with one BYE, not re-INVITEd, and reported ended by the outage.
    @Test func aCallWhoseOutageOutlastsTheSurvivalBudgetIsEndedWithByeOnReturn() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab, callSurvivalBudget: "1s")
            let far = try await f.farEnd("uas-bye-after-outage")
            let id = try await f.placeCall(to: far)
            try await lab.inject(.carrierLoss(f.wifi, for: .seconds(3)))
            #expect(await eventually(within: .seconds(20)) { (try? await f.state(of: id)) == nil }, "\(f.log())")
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics())")
            #expect(far.received("BYE").count == 1)
            #expect(far.received("INVITE").count == 1)
            #expect(f.log().contains("outage"), "ended by the outage: \(f.log())")
        }
    }

    /// An outgoing call still ringing when the address changes is recovered as the SIP plugin
    /// documents: the INVITE is CANCELled and a fresh one rings the far end from the new address
    /// (Contact and `c=`), which answers it; `ctl call` returns the same call, now active.
    @Test func aRingingOutgoingCallIsRungAgainFromTheNewAddress() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let far = try await f.farEnd("uas-ring-again", calls: 2)
            let placing = Task { try await f.ctl("call", CallFaultLab.user, far.uri(), within: .seconds(30)) }
            let rang = await eventually(within: .seconds(10)) {
                far.messages().contains { $0.sent && $0.status == 180 }
            }
            try #require(rang, "not ringing: \(far.diagnostics())")
            try await lab.inject(.addressChange(f.wifi, .makeBeforeBreak))
            let new = await lab.addresses(of: f.wifi).ipv4
            let reply = try await placing.value
            let words = reply.split(whereSeparator: \.isWhitespace)
            try #require(words.count == 3 && words[0] == "ok", "ctl call: \(reply); sipp: \(far.diagnostics())")
            let id = String(words[2])
            // `ctl call` returns while the far end still rings: the call is answered (active)
            // only after the CANCEL and the fresh INVITE, which sipp's log then holds.
            let answered = await eventually(within: .seconds(15)) { (try? await f.state(of: id)) == "active" }
            let listing = try await f.ctl("calls")
            try #require(
                answered, "ctl call: \(reply); calls: \(listing); sipp: \(far.diagnostics()); netres: \(f.log())")
            #expect(far.received("CANCEL").count == 1, "sipp: \(far.diagnostics()); netres: \(f.log())")
            let second = try #require(far.received("INVITE").last { $0.header("To")?.contains("tag=") == false })
            #expect(second.header("Contact")?.contains("@\(new):") == true, "\(second.text)")
            #expect(second.connectionAddress == new, "\(second.text)")
            try await f.ctl("hangup", id)
            #expect(await far.exitCode(within: .seconds(15)) == 0, "sipp: \(far.diagnostics())")
        }
    }

    /// An incoming call while the app is in the background rings (180 within sipp's 3 s), is
    /// listed by `ctl calls`, and is answered through `netres ctl answer`.
    @Test func anIncomingCallInTheBackgroundRingsAndIsAnsweredThroughCtl() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            try await f.ctl("state", "background")
            let caller = try await f.caller("uac-incoming")
            let rang = await eventually(within: .seconds(10)) {
                caller.messages().contains { !$0.sent && $0.status == 180 }
            }
            #expect(rang, "no 180: \(caller.diagnostics()); netres: \(f.log())")
            var listed: [String: Any]?
            _ = await eventually(within: .seconds(5)) {
                listed = try? await f.calls().first
                return listed != nil
            }
            let id = try #require(listed?["id"] as? String, "ctl calls: \(String(describing: listed))")
            #expect(listed?["direction"] as? String == "incoming")
            #expect(f.log().contains("call alerting "), "the daemon logs the ringing call: \(f.log())")
            try await f.ctl("answer", id)
            #expect(await caller.exitCode(within: .seconds(20)) == 0, "sipp: \(caller.diagnostics())")
        }
    }

    /// Malformed INVITEs from the far end: an SDP that does not parse gets 488, one without
    /// Contact 400 (sipp checks both); netres keeps running and alice stays bound.
    @Test func malformedInvitesGet488And400AndTheRegistrationStays() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab)
            let caller = try await f.caller("uac-malformed")
            #expect(await caller.exitCode(within: .seconds(20)) == 0, "sipp: \(caller.diagnostics())")
            #expect(await f.clientIsRunning(), "netres: \(f.log())")
            #expect(try await f.boundOnceAtCurrentAddress())
            #expect(try await f.ctl("status").contains(CallFaultLab.user))
        }
    }

}
