import Foundation
import ResilienceCore
import ResilienceTesting
import Synchronization
import Testing

@testable import SIPPlugin

/// RFC 3261 §17.2.1 with RFC 6026 and §9.2, through the server transaction table, timers on a
/// ManualClock the test moves: no real time passes.
@Suite(.timeLimit(.minutes(3)))
struct InviteServerTransactionTests {
    static let timers = SIPTimers()

    static func invite(branch: String = "z9hG4bKinv") -> SIPMessage {
        peerRequest("INVITE", branch: branch, callID: "call-s", cseq: 3)
    }

    static func request(_ method: String, branch: String = "z9hG4bKinv") -> SIPMessage {
        peerRequest(method, branch: branch, callID: "call-s", cseq: 3)
    }

    /// A table on a manual clock and every response it sent, in order.
    final class Lab: Sendable {
        let clock = ManualClock()
        let table: ServerTransactionTable
        let sent = Mutex<[SIPMessage]>([])

        init() { table = ServerTransactionTable(timers: InviteServerTransactionTests.timers, clock: clock) }

        var statuses: [Int] { sent.withLock { $0.compactMap(\.status) } }

        func receive(_ request: SIPMessage) -> ServerTransactionTable.Arrival {
            table.receive(
                request, reliable: false, at: clock.now,
                reply: { [self] message in self.sent.withLock { $0.append(message) } })
        }

        /// Moves the clock to the next deadline once `sleepers` timers are armed.
        func fireNext(sleepers: Int) async {
            await clock.waitForSleepers(count: sleepers)
            if let next = clock.nextDeadline { clock.advance(to: next) }
        }

        /// Fires whatever is still armed until no timer sleeps (bounded), so no task is left waiting.
        func finish() async {
            for _ in 0..<50 where clock.sleeperCount > 0 || table.count > 0 {
                clock.advance(by: .seconds(64))
                try? await Task.sleep(for: .milliseconds(10))
            }
        }

        /// Waits (bounded: a hang guard, not a timing assertion) until `condition` holds.
        func eventually(_ condition: () -> Bool) async -> Bool {
            for _ in 0..<500 {
                if condition() { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return condition()
        }
    }

    @Test func aNewInviteIsAnswered100TryingAtOnceAndARetransmissionGetsTheLastProvisional() throws {
        let lab = Lab()
        let transaction = try #require(lab.receive(Self.invite()).opened)
        #expect(lab.statuses == [100])
        #expect(lab.receive(Self.invite()).answered??.status == 100)
        transaction.respond(Self.invite().makeResponse(status: 180, reason: "Ringing", toTag: "me"), at: lab.clock.now)
        #expect(lab.receive(Self.invite()).answered??.status == 180)
        #expect(lab.statuses == [100, 180])
    }

    @Test func aNon2xxIsResentOnTimerGUntilTheAckThenTimerIEndsIt() async throws {
        let lab = Lab()
        let transaction = try #require(lab.receive(Self.invite()).opened)
        transaction.respond(
            Self.invite().makeResponse(status: 486, reason: "Busy Here", toTag: "me"), at: lab.clock.now)
        let start = lab.clock.now
        // G fires at 0.5, 1.5 and 3.5 s (T1 doubling): three retransmissions.
        for _ in 0..<3 { await lab.fireNext(sleepers: 2) }
        #expect(await lab.eventually { lab.statuses.count == 5 })
        #expect(lab.statuses == [100, 486, 486, 486, 486])
        #expect(lab.clock.now - start == .seconds(3.5))
        #expect(lab.table.acknowledge(Self.request("ACK"), at: lab.clock.now) == .absorbed)
        #expect(lab.table.inviteState(transaction.key) == .confirmed)
        #expect(lab.table.acknowledge(Self.request("ACK"), at: lab.clock.now) == .absorbed, "a repeated ACK too")
        // G (7.5 s), I (3.5 + T4 = 8.5 s) and H (32 s) sleep; none resends, I ends the transaction.
        await lab.fireNext(sleepers: 3)
        await lab.fireNext(sleepers: 2)
        #expect(await lab.eventually { lab.table.count == 0 }, "timer I forgot the transaction")
        #expect(lab.statuses.count == 5, "nothing resent after the ACK")
        await lab.finish()
    }

    @Test func withoutAnAckTimerHEndsTheTransactionAfterTenRetransmissions() async throws {
        let lab = Lab()
        let unacknowledged = Mutex<[SIPMessage]>([])
        lab.table.onAckTimeout { invite in unacknowledged.withLock { $0.append(invite) } }
        let transaction = try #require(lab.receive(Self.invite()).opened)
        transaction.respond(Self.invite().makeResponse(status: 603, reason: "Decline", toTag: "me"), at: lab.clock.now)
        // G at 0.5, 1.5, 3.5, 7.5, then every T2 = 4 s: 11.5 ... 31.5; H at 32 s.
        for _ in 0..<11 { await lab.fireNext(sleepers: 2) }
        #expect(await lab.eventually { lab.table.count == 0 })
        #expect(lab.statuses == [100] + Array(repeating: 603, count: 11))
        #expect(unacknowledged.withLock { $0 } == [Self.invite()], "timer H is reported once, with the INVITE")
        #expect(lab.receive(Self.invite()).opened != nil, "after timer H the branch is new again")
        await lab.finish()
    }

    @Test func a2xxIsResentOnlyByTheTUAndItsAckGoesToTheTU() async throws {
        let lab = Lab()
        let transaction = try #require(lab.receive(Self.invite()).opened)
        let ok = Self.invite().makeResponse(status: 200, reason: "OK", toTag: "me")
        transaction.respond(ok, at: lab.clock.now)
        #expect(lab.table.inviteState(transaction.key) == .accepted)
        #expect(lab.receive(Self.invite()).answered == .some(nil), "a retransmitted INVITE is absorbed in Accepted")
        transaction.respond(ok, at: lab.clock.now)
        #expect(lab.statuses == [100, 200, 200], "the TU's retransmission passes through")
        transaction.respond(Self.invite().makeResponse(status: 500, reason: "No", toTag: "me"), at: lab.clock.now)
        #expect(lab.statuses.count == 3, "no non-2xx after a 2xx")
        let ack = Self.request("ACK", branch: "z9hG4bKack2xx")
        #expect(lab.table.acknowledge(ack, at: lab.clock.now) == .forTransactionUser)
        await lab.fireNext(sleepers: 1)
        #expect(await lab.eventually { lab.table.count == 0 }, "timer L ends Accepted")
        #expect(lab.statuses.count == 3, "the transaction never resent the 2xx itself")
    }

    @Test func aCancelMatchingAProceedingInviteAnswersIt487AndIsItselfAnswered200ByTheLayer() async throws {
        let lab = Lab()
        let transaction = try #require(lab.receive(Self.invite()).opened)
        #expect(lab.receive(Self.request("CANCEL")).opened != nil, "CANCEL has its own transaction")
        let ringing = Self.invite().makeResponse(status: 180, reason: "Ringing", toTag: "callee")
        transaction.respond(ringing, at: lab.clock.now)
        let match = lab.table.cancel(Self.request("CANCEL"), at: lab.clock.now)
        #expect(match?.toTag == "callee", "the CANCEL's 200 carries the INVITE's To tag")
        #expect(lab.statuses == [100, 180, 487])
        let cancelled = lab.sent.withLock { $0.last }
        #expect(cancelled?.headers["To"]?.hasSuffix(";tag=callee") == true, "the 487 keeps the early dialog's tag")
        #expect(lab.table.inviteState(transaction.key) == .completed)
        #expect(lab.table.cancel(Self.request("CANCEL"), at: lab.clock.now) != nil, "still matched: 200, no 2nd 487")
        #expect(lab.statuses == [100, 180, 487])
        #expect(lab.table.acknowledge(Self.request("ACK"), at: lab.clock.now) == .absorbed, "the ACK of the 487")
        #expect(lab.table.cancel(Self.request("CANCEL", branch: "z9hG4bKother"), at: lab.clock.now) == nil, "481")
        await lab.finish()
    }

    @Test func theValueAloneFollowsTheRFCTable() {
        let now = ContinuousClock.now
        var machine = InviteServerTransaction(invite: Self.invite(), reliable: true, timers: Self.timers)
        #expect(machine.start(at: now).count == 1)
        let busy = Self.invite().makeResponse(status: 486, reason: "Busy Here", toTag: "me")
        #expect(machine.respond(busy, at: now) == [.send(busy), .arm(.h, at: now + .seconds(32))], "no G on a stream")
        #expect(machine.ackReceived(at: now) == [.arm(.i, at: now)], "I is zero on a stream")
        #expect(machine.timerFired(.h, at: now).isEmpty, "H does not fire once Confirmed")
        #expect(machine.timerFired(.i, at: now) == [.terminated])
        #expect(machine.respond(busy, at: now).isEmpty && machine.requestRetransmitted().isEmpty)
    }

    /// On loopback through a real agent: an INVITE without Contact (which the agent refuses, 400)
    /// gets 100 Trying, then its 400 resent on timer G until the peer's ACK; a CANCEL for it is matched
    /// (200), one for nothing is not (481).
    @Test func overTheWireTheInviteTransactionAnswersRetransmitsAndMatchesAckAndCancel() async throws {
        let peer = try UDPTestPeer()
        let account = SIPAccount(
            name: "callee", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "callee", domain: "127.0.0.1",
            password: "secret", expires: 300)
        let agent = SIPUserAgent(
            account: account, timers: SIPTimers(t1: .milliseconds(50), t2: .milliseconds(400)),
            logger: testLogger("invite-server"))
        let script = Task {
            await peer.run { peer -> [Int] in
                guard let (register, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                    let request = try? SIPParser.parse(datagram: register)
                else { return [] }
                peer.send(request.makeResponse(status: 200, reason: "OK", toTag: "reg").serialized(), to: from)
                var statuses: [Int] = []
                let note = { (bytes: [UInt8]) in
                    if let status = try? SIPParser.parse(datagram: bytes).status { statuses.append(status) }
                }
                peer.send(Self.invite(branch: "z9hG4bKwire").serialized(), to: from)
                // 100, 400, and at least one 400 resent by timer G (T1 = 50 ms): bounded reads.
                for _ in 0..<4 { if let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard) { note(bytes) } }
                peer.send(Self.request("ACK", branch: "z9hG4bKwire").serialized(), to: from)
                // Drain what was in flight when the ACK left, then expect silence.
                while let (bytes, _) = peer.receive(within: 1) { note(bytes) }
                statuses.append(-1)  // the ACK's place
                peer.send(Self.request("CANCEL", branch: "z9hG4bKwire").serialized(), to: from)
                if let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard) { note(bytes) }
                peer.send(Self.request("CANCEL", branch: "z9hG4bKnone").serialized(), to: from)
                if let (bytes, _) = peer.receive(within: UDPTestPeer.arrivalGuard) { note(bytes) }
                return statuses
            }
        }
        try await agent.register(path: loopbackPath())
        let statuses = await script.value
        let beforeAck = statuses.prefix { $0 != -1 }
        #expect(beforeAck.first == 100 && beforeAck.dropFirst().allSatisfy { $0 == 400 })
        #expect(beforeAck.count >= 3, "the 400 was resent on timer G before the ACK")
        #expect(beforeAck.count <= 6, "and stopped once the ACK arrived (at most one in flight)")
        #expect(Array(statuses.drop { $0 != -1 }.dropFirst()) == [200, 481], "CANCEL matched, then unmatched")
        await agent.close()
    }
}
