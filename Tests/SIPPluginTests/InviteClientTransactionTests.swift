import ResilienceCore
import Testing

@testable import SIPPlugin

/// RFC 3261 §17.1.1 with RFC 6026: timers A, B, D and M, the ACK for a non-2xx, 2xx passed up.
@Suite(.timeLimit(.minutes(3)))
struct InviteClientTransactionTests {
    static let timers = SIPTimers()
    static let invite: SIPMessage = {
        var invite = peerRequest("INVITE", uri: "sip:bob@198.18.0.9", branch: "z9hG4bKinv", callID: "call-1", cseq: 7)
        invite.headers.add("Route", "<sip:198.18.0.5;lr>")
        invite.headers.add("Max-Forwards", "70")
        return invite
    }()

    static func response(_ status: Int, tag: String = "far") -> SIPMessage {
        invite.makeResponse(status: status, reason: "R", toTag: tag)
    }

    /// Fires the earliest armed timer until the transaction ends or `steps` pass; records the
    /// instants (from start) of each INVITE sent and every non-timer action.
    struct Run {
        var machine = InviteClientTransaction(invite: invite, reliable: false, timers: timers)
        var armed: [InviteClientTransaction.Timer: ContinuousClock.Instant] = [:]
        var sends: [Duration] = []
        var others: [InviteClientTransaction.Action] = []
        let start = ContinuousClock.now
        var now = ContinuousClock.now

        init(reliable: Bool = false) {
            machine = InviteClientTransaction(
                invite: InviteClientTransactionTests.invite, reliable: reliable, timers: timers)
            now = start
            take(machine.start(at: start))
        }

        mutating func take(_ actions: [InviteClientTransaction.Action]) {
            for action in actions {
                switch action {
                case .sendInvite: sends.append(now - start)
                case .arm(let timer, let at): armed[timer] = at
                default: others.append(action)
                }
            }
        }

        /// Fires timers due up to `start + until`, in order.
        mutating func advance(to until: Duration) {
            for _ in 0..<100 {
                guard let (timer, at) = armed.min(by: { $0.value < $1.value }), at <= start + until else { break }
                armed[timer] = nil
                now = at
                take(machine.timerFired(timer, at: now))
            }
            now = start + until
        }

        mutating func receive(_ response: SIPMessage) { take(machine.received(response, at: now)) }
    }

    @Test func overUDPTheInviteIsResentAtDoublingIntervalsWithoutCapUntilTimerB() {
        var run = Run()
        run.advance(to: .seconds(40))
        // T1 = 0.5 s doubling with no T2 cap: 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5; B at 32 s.
        #expect(run.sends == [0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5].map { Duration.seconds($0) })
        #expect(run.others == [.fail(.timeout), .terminated])
        #expect(run.machine.state == .terminated)
    }

    @Test func overAStreamTheInviteIsSentOnce() {
        var run = Run(reliable: true)
        run.advance(to: .seconds(40))
        #expect(run.sends == [.zero])
        #expect(run.others == [.fail(.timeout), .terminated])
    }

    @Test func aProvisionalStopsRetransmissionAndTimerB() {
        var run = Run()
        run.advance(to: .seconds(1))
        run.receive(Self.response(180))
        run.advance(to: .seconds(120))
        #expect(run.sends == [0, 0.5].map { Duration.seconds($0) }, "no INVITE after the 180")
        #expect(run.others == [.provisional(Self.response(180))], "180 passed up; B does not fire in Proceeding")
        #expect(run.machine.state == .proceeding)
        run.receive(Self.response(100))
        #expect(run.others.count == 1, "100 Trying is not passed up")
    }

    @Test func aFirst100IsPassedUpOnceSoTheTUMayCancel() {
        var run = Run()
        run.receive(Self.response(100))
        run.receive(Self.response(100))
        #expect(run.others == [.provisional(Self.response(100))], "only the first 100 goes up")
        #expect(run.machine.state == .proceeding)
        run.advance(to: .seconds(40))
        #expect(run.sends == [.zero], "no INVITE retransmission and no timer B after the 100")
    }

    @Test func aNon2xxIsAckedInsideTheTransactionWithItsBranchAndTheResponsesToTag() throws {
        var run = Run()
        run.receive(Self.response(486, tag: "busy"))
        let ack = try #require(run.others.compactMap { if case .sendAck(let m) = $0 { m } else { nil } }.first)
        #expect(run.others.contains(.rejected(Self.response(486, tag: "busy"))))
        #expect(ack.method == "ACK")
        guard case .request(_, let uri) = ack.startLine else { return }
        #expect(uri == "sip:bob@198.18.0.9", "same Request-URI as the INVITE")
        #expect(ack.topViaBranch == "z9hG4bKinv" && ack.headers.listValues("Via").count == 1)
        #expect(ack.headers["To"]?.hasSuffix(";tag=busy") == true)
        #expect(ack.headers["CSeq"] == "7 ACK")
        #expect(ack.headers["Route"] == "<sip:198.18.0.5;lr>")
        // A retransmitted 486 is ACKed again and not passed up; timer D ends it at 64×T1.
        run.receive(Self.response(486, tag: "busy"))
        #expect(run.others.filter { if case .sendAck = $0 { true } else { false } }.count == 2)
        #expect(run.others.filter { if case .rejected = $0 { true } else { false } }.count == 1)
        run.advance(to: .seconds(31))
        #expect(run.machine.state == .completed)
        run.advance(to: .seconds(33))
        #expect(run.machine.state == .terminated)
        #expect(run.sends == [.zero], "no INVITE retransmission after the final")
    }

    @Test func a2xxIsPassedUpNeverAckedAndRetransmissionsAbsorbedUntilTimerM() {
        var run = Run()
        run.receive(Self.response(180))
        run.receive(Self.response(200))
        #expect(run.machine.state == .accepted)
        run.receive(Self.response(200))
        run.receive(Self.response(200))
        #expect(
            run.others == [
                .provisional(Self.response(180)), .answered(Self.response(200)),
                .answeredAgain(Self.response(200)), .answeredAgain(Self.response(200)),
            ])
        run.receive(Self.response(486))
        #expect(run.others.count == 4, "a late non-2xx in Accepted is ignored")
        run.advance(to: .seconds(31))
        #expect(run.machine.state == .accepted)
        run.advance(to: .seconds(33))
        #expect(run.machine.state == .terminated && run.others.last == .terminated)
        run.receive(Self.response(200))
        #expect(run.others.count == 5, "after timer M nothing")
    }

    @Test func aClosedFlowFailsAPendingTransactionOnce() {
        var machine = InviteClientTransaction(invite: Self.invite, reliable: true, timers: Self.timers)
        _ = machine.start(at: .now)
        #expect(machine.flowClosed() == [.fail(.flowClosed), .terminated])
        #expect(machine.flowClosed().isEmpty)
    }

    @Test func theAckForA2xxFollowsTheRouteSetAndRemoteTargetWithANewBranch() throws {
        let ok = Self.response(200, tag: "far")
        let loose = SIPMessage.ackFor2xx(
            invite: Self.invite, response: ok, routeSet: ["<sip:198.18.0.5;lr>", "<sip:198.18.0.6;lr>"],
            remoteTarget: "sip:bob@198.18.0.9:5070", via: "SIP/2.0/UDP 198.18.0.1:5060;branch=z9hG4bKack")
        guard case .request(let method, let uri) = loose.startLine else { Issue.record("not a request"); return }
        #expect(method == "ACK" && uri == "sip:bob@198.18.0.9:5070")
        #expect(loose.headers.values("Route") == ["<sip:198.18.0.5;lr>", "<sip:198.18.0.6;lr>"])
        #expect(loose.topViaBranch == "z9hG4bKack")
        #expect(loose.headers["CSeq"] == "7 ACK" && loose.headers["To"]?.hasSuffix("tag=far") == true)
        let strict = SIPMessage.ackFor2xx(
            invite: Self.invite, response: ok, routeSet: ["<sip:198.18.0.5>"],
            remoteTarget: "sip:bob@198.18.0.9:5070", via: "SIP/2.0/UDP 198.18.0.1:5060;branch=z9hG4bKack")
        guard case .request(_, let strictURI) = strict.startLine else { return }
        #expect(strictURI == "sip:198.18.0.5", "a strict router is the Request-URI")
        #expect(strict.headers.values("Route") == ["<sip:bob@198.18.0.9:5070>"])
    }
}
