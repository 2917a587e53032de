import Foundation
import NIOCore
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The INVITE client transaction over a real UDP socket to a scripted peer, every timer on a
/// ManualClock: retransmissions and timeouts are counted, no real second passes per timer.
@Suite(.timeLimit(.minutes(3)))
struct InviteClientDriverTests {
    static let timers = SIPTimers()

    /// A transport to `peer` whose responses reach `table`, and the INVITE to send on it.
    static func setUp(
        peer: UDPTestPeer, clock: ManualClock, table: TransactionTable
    ) async throws -> (SIPTransport, SIPMessage) {
        let log = ThrottledLog(logger: testLogger("invite-client"), clock: clock)
        let transport = try await SIPTransport.open(
            kind: .udp, localHost: "127.0.0.1", remote: try SocketAddress(ipAddress: "127.0.0.1", port: peer.port),
            log: log, flowTag: "d1", onLost: { _ in }, onPong: {},
            inbound: { message, _ in table.deliver(message, at: clock.now) })
        var invite = SIPMessage.request("INVITE", uri: "sip:bob@127.0.0.1:\(peer.port)")
        invite.headers.add("Via", "SIP/2.0/UDP \(transport.sentBy);branch=z9hG4bKd1.drive")
        invite.headers.add("From", "<sip:alice@127.0.0.1>;tag=a1")
        invite.headers.add("To", "<sip:bob@127.0.0.1>")
        invite.headers.add("Call-ID", "drive-1")
        invite.headers.add("CSeq", "1 INVITE")
        return (transport, invite)
    }

    /// Runs the transaction in a task; returns it and the events it yielded once it ended.
    static func start(
        _ invite: SIPMessage, over transport: SIPTransport, table: TransactionTable, clock: ManualClock
    ) -> Task<[InviteClientEvent], Never> {
        let (events, output) = AsyncStream.makeStream(of: InviteClientEvent.self)
        return Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await runInviteTransaction(
                        invite, over: transport, table: table, timers: timers, clock: clock, events: output)
                }
                var seen: [InviteClientEvent] = []
                for await event in events { seen.append(event) }
                return seen
            }
        }
    }

    @Test func anUnansweredInviteIsSentSevenTimesThenTimerBFailsIt() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let table = TransactionTable()
        let (transport, invite) = try await Self.setUp(peer: peer, clock: clock, table: table)
        let start = clock.now
        let run = Self.start(invite, over: transport, table: table, clock: clock)
        var fired = 0
        while fired < 20 {
            await clock.waitForSleepers(count: 2)
            guard let next = clock.nextDeadline, next < start + Self.timers.transactionTimeout else { break }
            clock.advance(to: next)
            fired += 1
        }
        clock.advance(to: start + Self.timers.transactionTimeout)
        #expect(await run.value == [.failed(.timeout)])
        // A at 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s (doubling, no cap) before B at 32 s.
        #expect(fired == 6)
        #expect(await NonInviteClientTransactionTests.datagrams(at: peer) == 7)
        await transport.close()
    }

    @Test func aRejectionIsAckedOnItsBranchEachTimeItArrivesAndPassedUpOnce() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let table = TransactionTable()
        let (transport, invite) = try await Self.setUp(peer: peer, clock: clock, table: table)
        let script = Task {
            await peer.run { peer -> [SIPMessage] in
                guard let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                    let invite = try? SIPParser.parse(datagram: bytes)
                else { return [] }
                peer.send(invite.makeResponse(status: 180, reason: "Ringing", toTag: "b1").serialized(), to: from)
                var acks: [SIPMessage] = []
                for _ in 0..<2 {
                    peer.send(invite.makeResponse(status: 486, reason: "Busy Here", toTag: "b1").serialized(), to: from)
                    guard let (ack, _) = peer.receive(within: UDPTestPeer.arrivalGuard),
                        let parsed = try? SIPParser.parse(datagram: ack)
                    else { break }
                    acks.append(parsed)
                }
                return acks
            }
        }
        let run = Self.start(invite, over: transport, table: table, clock: clock)
        let acks = await script.value
        #expect(acks.count == 2)
        #expect(acks.allSatisfy { $0.method == "ACK" && $0.topViaBranch == "z9hG4bKd1.drive" })
        #expect(acks.allSatisfy { $0.headers["To"]?.hasSuffix("tag=b1") == true && $0.headers["CSeq"] == "1 ACK" })
        // Timer D (32 s over UDP) ends it; the clock, not the wall, moves there (A and D armed).
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(64))
        let events = await run.value
        #expect(events.count == 2)
        #expect(events.first.map { if case .provisional = $0 { true } else { false } } == true)
        #expect(events.last.map { if case .rejected(let r) = $0 { r.status == 486 } else { false } } == true)
        await transport.close()
    }

    @Test func a2xxIsPassedUpAndItsRetransmissionAgainButNeverAckedByTheTransaction() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let table = TransactionTable()
        let (transport, invite) = try await Self.setUp(peer: peer, clock: clock, table: table)
        let script = Task {
            await peer.run { peer -> Int in
                guard let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard),
                    let invite = try? SIPParser.parse(datagram: bytes)
                else { return -1 }
                let ok = invite.makeResponse(status: 200, reason: "OK", toTag: "b2").serialized()
                peer.send(ok, to: from)
                peer.send(ok, to: from)
                var more = 0
                while more < 10, peer.receive(within: 0.5) != nil { more += 1 }
                return more
            }
        }
        let run = Self.start(invite, over: transport, table: table, clock: clock)
        #expect(await script.value == 0, "no ACK (and no INVITE) from the transaction after a 2xx")
        // Timer M (64×T1) ends Accepted (A and M armed).
        await clock.waitForSleepers(count: 2)
        clock.advance(by: .seconds(64))
        let statuses = await run.value.map { event -> String in
            switch event {
            case .answered(let r): "answered \(r.status ?? 0)"
            case .answeredAgain(let r): "again \(r.status ?? 0)"
            default: "\(event)"
            }
        }
        #expect(statuses == ["answered 200", "again 200"])
        await transport.close()
    }
}
