import Foundation
import Logging
import NIOCore
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// RFC 3261 §17.1.2 timers E and F, on a clock the test moves.
@Suite(.timeLimit(.minutes(3)))
struct NonInviteClientTransactionTests {
    static let timers = SIPTimers()
    static let provisional = SIPMessage(startLine: .response(status: 100, reason: "Trying"))
    static let final = SIPMessage(startLine: .response(status: 200, reason: "OK"))

    /// Runs the value alone: fires whichever armed timer is due first until the transaction ends.
    /// Returns the instants (from start) at which the request was sent and how it ended.
    static func drive(
        _ machine: inout NonInviteClientTransaction, provisionalAt: Duration? = nil
    ) -> (sends: [Duration], end: NonInviteClientTransaction.Action?) {
        let start = ContinuousClock.now
        var armed: [NonInviteClientTransaction.Timer: ContinuousClock.Instant] = [:]
        var sends: [Duration] = []
        var actions = machine.start(at: start)
        var now = start
        var provisionalDue = provisionalAt.map { start + $0 }
        for _ in 0..<200 {
            for action in actions {
                switch action {
                case .send: sends.append(now - start)
                case .arm(let timer, let at): armed[timer] = at
                case .complete, .fail: return (sends, action)
                }
            }
            if let due = provisionalDue, armed.values.allSatisfy({ due <= $0 }) {
                now = due
                provisionalDue = nil
                actions = machine.received(provisional)
                continue
            }
            guard let (timer, at) = armed.min(by: { $0.value < $1.value }) else { return (sends, nil) }
            armed[timer] = nil
            now = at
            actions = machine.timerFired(timer, at: now)
        }
        return (sends, nil)
    }

    @Test func overUDPTheRequestIsResentAtDoublingIntervalsCappedAtT2ThenTimesOut() {
        var machine = NonInviteClientTransaction(reliable: false, timers: Self.timers)
        let (sends, end) = Self.drive(&machine)
        // T1 = 0.5 s doubling to T2 = 4 s: 0, 0.5, 1.5, 3.5, 7.5, then every 4 s until F at 32 s.
        #expect(sends == [0, 0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5].map { Duration.seconds($0) })
        #expect(end == .fail(.timeout))
        #expect(machine.state == .terminated)
    }

    @Test func aProvisionalResponseSlowsRetransmissionToT2() {
        var machine = NonInviteClientTransaction(reliable: false, timers: Self.timers)
        let (sends, _) = Self.drive(&machine, provisionalAt: .milliseconds(600))
        #expect(Array(sends.prefix(4)) == [0, 0.5, 1.5, 5.5].map { Duration.seconds($0) })
    }

    @Test func overTCPTheRequestIsSentOnce() {
        var machine = NonInviteClientTransaction(reliable: true, timers: Self.timers)
        let (sends, end) = Self.drive(&machine)
        #expect(sends == [.zero])
        #expect(end == .fail(.timeout))
    }

    @Test func theFirstFinalResponseCompletesAndLaterEventsDoNothing() {
        var machine = NonInviteClientTransaction(reliable: false, timers: Self.timers)
        _ = machine.start(at: .now)
        #expect(machine.received(Self.final) == [.complete(Self.final)])
        #expect(machine.received(Self.final).isEmpty)
        #expect(machine.timerFired(.f, at: .now).isEmpty)
        #expect(machine.flowClosed().isEmpty)
    }

    /// The driver over a real UDP socket to a peer that never answers, with every timer on a
    /// ManualClock: the peer counts the retransmissions, and no real second passes per timer.
    @Test func aManualClockDrivesRetransmissionsAndTimeoutOverARealSocket() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let transport = try await Self.udpTransport(to: peer, clock: clock)
        var request = SIPMessage.request("OPTIONS", uri: "sip:127.0.0.1:\(peer.port)")
        request.headers.add("Via", "SIP/2.0/UDP \(transport.sentBy);branch=z9hG4bKt1.manual")
        request.headers.add("CSeq", "1 OPTIONS")
        let start = clock.now
        let table = TransactionTable()
        let transaction = Task {
            try await runNonInviteTransaction(request, over: transport, table: table, timers: Self.timers, clock: clock)
        }
        let fired = await Self.fireTimers(on: clock, before: start + Self.timers.transactionTimeout)
        clock.advance(to: start + Self.timers.transactionTimeout)
        await #expect(throws: TransactionFailure.timeout) { try await transaction.value }
        #expect(clock.now - start == Self.timers.transactionTimeout)
        // The first send and ten retransmissions, as the value test above derives.
        #expect(await Self.datagrams(at: peer) == 11)
        #expect(fired == 10)
        await transport.close()
    }

    /// The pacer's measure: copies sent before the answer, not the time it took. A peer that
    /// answers the first copy however late counts 1; one that answers only the second, 2.
    @Test(arguments: [1, 2])
    func theCountedTransactionSaysHowManyCopiesWentOutBeforeTheAnswer(answeredCopy: Int) async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let table = TransactionTable()
        let transport = try await Self.udpTransport(to: peer, clock: clock, table: table)
        var request = SIPMessage.request("REGISTER", uri: "sip:127.0.0.1:\(peer.port)")
        request.headers.add("Via", "SIP/2.0/UDP \(transport.sentBy);branch=z9hG4bKt1.counted\(answeredCopy)")
        request.headers.add("CSeq", "1 REGISTER")
        let transaction = Task {
            try await runCountedNonInviteTransaction(
                request, over: transport, table: table, timers: Self.timers, clock: clock)
        }
        if answeredCopy == 2 {
            // Timer E (T1) resends once; nothing answered the first copy.
            await clock.waitForSleepers(count: 2)
            clock.advance(by: Self.timers.t1)
        }
        let answered = await peer.run { peer -> Bool in
            var last: (bytes: [UInt8], from: sockaddr_in)?
            for _ in 0..<answeredCopy { last = peer.receive(within: UDPTestPeer.arrivalGuard) }
            guard let (bytes, from) = last, let copy = try? SIPParser.parse(datagram: bytes) else { return false }
            peer.send(copy.makeResponse(status: 200, reason: "OK", toTag: "c").serialized(), to: from)
            return true
        }
        #expect(answered)
        let (response, copies) = try await transaction.value
        #expect(response.status == 200)
        #expect(copies == answeredCopy)
        await transport.close()
    }

    /// The same through the plugin: the executor's clock, lent in the action's context, runs the
    /// REGISTER's timers; a registrar that never answers ends it as a retryable timeout.
    @Test func thePluginRunsTransactionTimersOnTheClockItsContextLends() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let account = SIPAccount(
            name: "silent", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "silent",
            domain: "127.0.0.1", password: "pw", flowPing: .off)
        let plugin = SIPPlugin(accounts: [account], logger: testLogger("lent-clock"))
        let lent = PluginContext(
            logger: testLogger("lent-clock"), deadline: clock.now + .seconds(60), network: .empty,
            path: loopbackPath(), epoch: .initial, clock: clock)
        let start = clock.now
        let register = Task { try await plugin.perform(action(.register, account.registrationService), context: lent) }
        let fired = await Self.fireTimers(on: clock, before: start + Self.timers.transactionTimeout)
        clock.advance(to: start + Self.timers.transactionTimeout)
        await #expect {
            try await register.value
        } throws: { error in
            (error as? PluginError)?.isRetryable == true
        }
        #expect(await Self.datagrams(at: peer) == 11)
        #expect(fired == 10)
        await plugin.agent(for: "silent")?.close()
    }

    /// A UDP flow from loopback to `peer`, logging on `clock`; inbound responses go to `table`'s
    /// transactions (none without one), requests nowhere.
    static func udpTransport(
        to peer: UDPTestPeer, clock: ManualClock, table: TransactionTable? = nil
    ) async throws -> SIPTransport {
        let log = ThrottledLog(logger: testLogger("transaction"), clock: clock)
        return try await SIPTransport.open(
            kind: .udp, localHost: "127.0.0.1", remote: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
            log: log, flowTag: "t1", onLost: { _ in }, onPong: {},
            inbound: { message, _ in _ = table?.deliver(message, at: clock.now) })
    }

    /// With timers E and F armed, fires the earliest while it is before `limit`, waiting each
    /// time for the driver to re-arm E (bounded); returns how many fired.
    static func fireTimers(on clock: ManualClock, before limit: ContinuousClock.Instant) async -> Int {
        var fired = 0
        while fired < 40 {
            await clock.waitForSleepers(count: 2)
            guard let next = clock.nextDeadline, next < limit else { break }
            clock.advance(to: next)
            fired += 1
        }
        return fired
    }

    /// How many datagrams reached `peer` (reads until it has been quiet for half a second).
    static func datagrams(at peer: UDPTestPeer) async -> Int {
        await peer.run { peer in
            var count = 0
            while count < 50, peer.receive(within: 0.5) != nil { count += 1 }
            return count
        }
    }

    @Test func aRetransmittedFinalResponseIsAbsorbedUntilTimerK() {
        let table = TransactionTable()
        let (_, sink) = AsyncStream.makeStream(of: TransactionTable.Event.self)
        let key = TransactionTable.Key(branch: "z9hG4bKk", method: "REGISTER")
        var response = Self.final
        response.headers.add("Via", "SIP/2.0/UDP h;branch=z9hG4bKk")
        response.headers.add("CSeq", "1 REGISTER")
        let now = ContinuousClock.now
        table.open(key, flow: ObjectIdentifier(table), sink: sink)
        #expect(table.deliver(response, at: now) == .delivered)
        table.close(key, absorbUntil: now + Self.timers.t4)
        #expect(table.deliver(response, at: now + .seconds(1)) == .absorbed)
        #expect(table.deliver(response, at: now + Self.timers.t4) == .unknown)
    }
}
