import Foundation
import Logging
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// RFC 3261 §17.2.2 non-INVITE server transactions: one delivery, retransmissions answered from
/// the transaction, timer J.
@Suite(.timeLimit(.minutes(3)))
struct ServerTransactionTests {
    static let timers = SIPTimers()

    static func notify(branch: String = "z9hG4bKn1") -> SIPMessage {
        peerRequest("NOTIFY", branch: branch, callID: "c1", toTag: "t")
    }

    @Test func aRetransmissionIsAbsorbedThenAnsweredFromTheTransactionUntilTimerJ() throws {
        let table = ServerTransactionTable(timers: Self.timers)
        let now = ContinuousClock.now
        let receive = { (at: ContinuousClock.Instant) in
            table.receive(Self.notify(), reliable: false, at: at, reply: { _ in })
        }
        let transaction = try #require(receive(now).opened, "the first copy opens a transaction")
        #expect(receive(now).answered == .some(nil), "before the answer a retransmission is absorbed")
        let ok = Self.notify().makeResponse(status: 200, reason: "OK")
        #expect(table.respond(transaction.key, with: ok, at: now))
        #expect(!table.respond(transaction.key, with: ok, at: now), "one final response only")
        let beforeJ = now + Self.timers.transactionTimeout - .milliseconds(1)
        #expect(receive(beforeJ).answered == .some(ok), "within timer J it is answered again")
        #expect(receive(now + Self.timers.transactionTimeout).opened != nil, "after timer J it is new")
    }

    @Test func overAStreamTimerJIsZero() throws {
        let table = ServerTransactionTable(timers: Self.timers)
        let now = ContinuousClock.now
        let receive = { table.receive(Self.notify(), reliable: true, at: now, reply: { _ in }) }
        let transaction = try #require(receive().opened)
        _ = table.respond(transaction.key, with: Self.notify().makeResponse(status: 200, reason: "OK"), at: now)
        #expect(receive().opened != nil, "a stream transaction ends with its final response")
    }

    @Test func aFullTableRefusesRatherThanGrows() {
        let table = ServerTransactionTable(timers: Self.timers, admission: InboundAdmissionTests.open)
        let now = ContinuousClock.now
        for index in 0..<ServerTransactionTable.capacity {
            _ = table.receive(Self.notify(branch: "z9hG4bK\(index)"), reliable: false, at: now, reply: { _ in })
        }
        let more = table.receive(Self.notify(branch: "z9hG4bKmore"), reliable: false, at: now, reply: { _ in })
        #expect(more.opened == nil && more.answered == nil, "refused")
        if case .answered(let answer) = more {
            #expect(answer.status == 503 && answer.headers["Retry-After"] != nil, "and told when to retry")
        } else {
            Issue.record("a request at the cap was not answered: \(more)")
        }
        #expect(table.count == ServerTransactionTable.capacity)
    }

    /// A burst's finished transactions do not outlive it: one sweep, armed once for the table,
    /// forgets them a timer J after the answers (before, they stayed until the table next filled:
    /// up to 512 requests and answers per account kept after a flood), and nothing stays armed.
    @Test func aBurstsFinishedTransactionsAreForgottenByOneSweep() async throws {
        let clock = ManualClock()
        let table = ServerTransactionTable(timers: Self.timers, clock: clock, admission: InboundAdmissionTests.open)
        for index in 0..<300 {
            let request = Self.notify(branch: "z9hG4bKburst\(index)")
            let opened = try #require(table.receive(request, reliable: false, at: clock.now, reply: { _ in }).opened)
            table.respond(opened.key, with: request.makeResponse(status: 200, reason: "OK"), at: clock.now)
        }
        #expect(table.count == 300)
        await clock.waitForSleepers(count: 1)
        #expect(clock.sleeperCount == 1, "one sweep for the whole table, not one timer per transaction")
        clock.advance(by: Self.timers.transactionTimeout + .seconds(1))
        #expect(await eventually(within: .seconds(30)) { table.count == 0 })
        #expect(clock.sleeperCount == 0, "an empty table arms nothing")
    }

    @Test func branchesWithoutTheMagicCookieMatchByCallIDCSeqAndFromTag() throws {
        let first = try #require(ServerTransactionTable.key(of: Self.notify(branch: "old1")))
        var other = Self.notify(branch: "old1")
        other.headers.set("CSeq", "2 NOTIFY")
        #expect(ServerTransactionTable.key(of: other) != first)
        #expect(ServerTransactionTable.key(of: Self.notify(branch: "old1")) == first)
        var ack = Self.notify()
        ack.startLine = .request(method: "ACK", uri: "sip:a@198.18.0.2")
        #expect(ServerTransactionTable.key(of: ack) == nil)
    }

    /// End to end on loopback: a notifier sends one NOTIFY twice (same branch), then another.
    /// Both copies of the first get the same 200; the agent counts two NOTIFYs, not three.
    @Test func aRetransmittedNotifyIsAnsweredFromTheTransactionAndDeliveredOnce() async throws {
        let peer = try UDPTestPeer()
        let port = peer.port
        let account = SIPAccount(
            name: "peer", registrarHost: "127.0.0.1", registrarPort: port, user: "peer", domain: "127.0.0.1",
            password: "secret", expires: 300)
        let agent = SIPUserAgent(account: account, logger: testLogger("server-transaction"))
        let service = SIPSubscriptionPeerTests.service
        let script = Task {
            await peer.run { peer -> [[UInt8]] in
                guard
                    let (subscribe, from) = SIPSubscriptionPeerTests.nextRequest(
                        peer, within: UDPTestPeer.arrivalGuard)
                else { return [] }
                peer.send(SIPSubscriptionPeerTests.accept(subscribe, tag: "srv", port: port), to: from)
                let first = SIPSubscriptionPeerTests.notify(
                    for: subscribe, tag: "srv", state: "active;expires=300", port: port)
                let second = SIPSubscriptionPeerTests.notify(
                    for: subscribe, tag: "srv", state: "active;expires=200", port: port)
                var answers: [[UInt8]] = []
                for datagram in [first, first, second] {
                    peer.send(datagram, to: from)
                    guard let (answer, _) = peer.receive(within: UDPTestPeer.arrivalGuard) else { return answers }
                    answers.append(answer)
                }
                return answers
            }
        }
        try await agent.subscribe(SIPSubscriptionPeerTests.target, service: service, path: loopbackPath())
        let answers = await script.value
        #expect(answers.count == 3)
        let statuses = answers.compactMap { try? SIPParser.parse(datagram: $0).status }
        #expect(statuses == [200, 200, 200])
        #expect(answers.count == 3 && answers[0] == answers[1], "the retransmission gets the same answer")
        // The third answer is sent when the second NOTIFY is served, in order behind the first:
        // two served means the first was served once.
        #expect(await agent.subscriptionStatus(service).notifyCount == 2)
        await agent.close()
    }
}

extension ServerTransactionTable.Arrival {
    /// The transaction a first copy opened.
    var opened: ServerTransaction? {
        if case .new(let transaction) = self { transaction } else { nil }
    }

    /// For a retransmission, what it was answered with (`.some(nil)`: absorbed).
    var answered: SIPMessage?? {
        if case .retransmission(let answer) = self { .some(answer) } else { nil }
    }
}
