import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// What a subscriber does when its notifier ends the subscription (RFC 6665 §4.1.3), against a
/// scripted notifier on loopback UDP: the agent asks for a SUBSCRIBE through `onFlowLost` (the
/// plugin's `.flowLost` report), and that SUBSCRIBE opens a new dialog at once, after the
/// notifier's `retry-after`, after the executor's backoff, or not at all.
@Suite(.timeLimit(.minutes(3)))
struct SIPSubscriptionTerminationTests {
    typealias Peer = SIPSubscriptionPeerTests
    static let service = Peer.service

    /// What the next `subscribe` after the terminating NOTIFY does.
    enum Expected: Sendable, CustomStringConvertible {
        /// Sends a new SUBSCRIBE at once.
        case atOnce
        /// Throws a retryable error asking for this wait (nil: the executor's backoff), then sends.
        case waits(Duration?)
        /// Throws a permanent error; nothing is sent.
        case stops

        var description: String {
            switch self {
            case .atOnce: "at once"
            case .waits(let wait): "waits \(wait.map { "\($0)" } ?? "backoff")"
            case .stops: "stops"
            }
        }
    }

    static let cases: [(String, Expected)] = [
        ("terminated;reason=deactivated", .atOnce),
        ("terminated;reason=timeout", .atOnce),
        ("terminated;reason=probation;retry-after=7", .waits(.seconds(7))),
        ("terminated;reason=giveup;retry-after=99999999999999999999", .waits(.seconds(SIPWireNumber.maximumLifetime))),
        ("terminated;reason=giveup", .waits(nil)),
        ("terminated;reason=no-such-reason", .waits(nil)),
        ("terminated", .waits(nil)),
        ("actively-garbled;expires=9", .waits(nil)),
        ("terminated;reason=noresource", .stops),
        ("terminated;reason=rejected", .stops),
    ]

    @Test(arguments: cases)
    func aTerminatingNotifyIsFollowedAsRFC6665Says(state: String, expected: Expected) async throws {
        let peer = try UDPTestPeer()
        let losses = LossRecorder()
        let account = SIPAccount(
            name: "peer", registrarHost: "127.0.0.1", registrarPort: peer.port, user: "peer", domain: "127.0.0.1",
            password: "secret", expires: 300)
        let agent = SIPUserAgent(account: account, logger: testLogger("termination")) { losses.record($0) }
        let port = peer.port
        let script = Task {
            await peer.run { peer -> [String] in
                var log: [String] = []
                guard let (first, from) = Peer.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
                else { return ["no SUBSCRIBE"] }
                peer.send(Peer.accept(first, tag: "srv", port: port), to: from)
                // One at a time: each NOTIFY is answered before the next is sent.
                for (cseq, value) in [(1, "active"), (2, state)] {
                    peer.send(
                        Peer.notify(for: first, tag: "srv", state: value, port: port, cseq: UInt32(cseq)), to: from)
                    guard let (answer, _) = Peer.nextRequest(peer) else { return log + ["no answer"] }
                    log.append("notify-answer \(answer.status ?? 0)")
                }
                // A NOTIFY in the ended dialog: the dialog is gone.
                peer.send(Peer.notify(for: first, tag: "srv", state: "active", port: port, cseq: 3), to: from)
                // Its answer and the re-SUBSCRIBE may cross: take both in either order.
                for _ in 0..<2 {
                    guard let (message, _) = Peer.nextRequest(peer) else { break }
                    guard message.method == "SUBSCRIBE" else {
                        log.append("late-notify-answer \(message.status ?? 0)")
                        continue
                    }
                    log.append(
                        "SUBSCRIBE to-tag=\(message.headers["To"]!.contains("tag=")) "
                            + "same-call=\(message.headers["Call-ID"] == first.headers["Call-ID"])")
                    peer.send(Peer.accept(message, tag: "srv2", port: port), to: from)
                }
                return log
            }
        }
        let path = loopbackPath()
        try await agent.subscribe(Peer.target, service: Self.service, path: path)
        #expect(await eventually(within: .seconds(5)) { losses.all == [[Self.service]] }, "reports: \(losses.all)")
        let status = await agent.subscriptionStatus(Self.service)
        guard case .terminated = status.state else {
            Issue.record("not terminated: \(status.state)")
            return
        }
        switch expected {
        case .atOnce:
            try await agent.subscribe(Peer.target, service: Self.service, path: path)
        case .waits(let wait):
            await #expect {
                try await agent.subscribe(Peer.target, service: Self.service, path: path)
            } throws: { error in
                let error = error as? PluginError
                return error?.isRetryable == true && error?.retryAfter == wait
            }
            try await agent.subscribe(Peer.target, service: Self.service, path: path)
        case .stops:
            await #expect {
                try await agent.subscribe(Peer.target, service: Self.service, path: path)
            } throws: { error in
                (error as? PluginError)?.isRetryable == false
            }
        }
        let log = await script.value
        let resubscribed = "SUBSCRIBE to-tag=false same-call=false"
        let expectedLog =
            ["notify-answer 200", "notify-answer 200", "late-notify-answer 481"]
            + (expected.isStop ? [] : [resubscribed])
        #expect(log.sorted() == expectedLog.sorted())
        #expect(losses.all == [[Self.service]], "one report per ended subscription")
        await agent.close()
    }

    @Test func anOutOfOrderNotifyIsRefusedAndAForkIsNotAccepted() async throws {
        let peer = try UDPTestPeer()
        let agent = Peer().makeAgent(port: peer.port)
        let port = peer.port
        let script = Task {
            await peer.run { peer -> [Int] in
                guard let (first, from) = Peer.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
                else { return [] }
                peer.send(Peer.accept(first, tag: "srv", port: port), to: from)
                var statuses: [Int] = []
                for (tag, cseq) in [("srv", 5), ("srv", 4), ("other", 9), ("srv", 5), ("srv", 6)] {
                    peer.send(
                        Peer.notify(for: first, tag: tag, state: "active", port: port, cseq: UInt32(cseq)), to: from)
                    if let (answer, _) = Peer.nextRequest(peer) { statuses.append(answer.status ?? 0) }
                }
                return statuses
            }
        }
        try await agent.subscribe(Peer.target, service: Self.service, path: loopbackPath())
        // Lower CSeq: 500 (RFC 3261 §12.2.2); another notifier's tag: a fork, refused with 481.
        #expect(await script.value == [200, 500, 481, 200, 200])
        #expect(await agent.subscriptionStatus(Self.service).notifyCount == 3)
        await agent.close()
    }

    @Test func theFirstSubscribeAfterALostFlowOpensANewDialog() async throws {
        let peer = try UDPTestPeer()
        let agent = Peer().makeAgent(port: peer.port)
        let port = peer.port
        let script = Task {
            await peer.run { peer -> [Bool] in
                guard let (first, from) = Peer.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
                else { return [] }
                peer.send(Peer.accept(first, tag: "srv", port: port), to: from)
                guard let (again, _) = Peer.nextRequest(peer) else { return [] }
                peer.send(Peer.accept(again, tag: "srv2", port: port), to: from)
                return [again.headers["To"]!.contains("tag="), again.headers["Call-ID"] == first.headers["Call-ID"]]
            }
        }
        try await agent.subscribe(Peer.target, service: Self.service, path: loopbackPath())
        await agent.subscriptionsLostTheirFlow()
        try await agent.subscribe(Peer.target, service: Self.service, path: loopbackPath())
        // Out of the old dialog: no to-tag, a new Call-ID (one SUBSCRIBE, no 481 round first).
        #expect(await script.value == [false, false])
        await agent.close()
    }
}

extension SIPSubscriptionTerminationTests.Expected {
    var isStop: Bool {
        if case .stops = self { return true }
        return false
    }
}
