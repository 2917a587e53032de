import Foundation
import Logging
import NetworkLab
import ResilienceCore
import ResilienceTesting
import Testing

@testable import SIPPlugin

/// The UA against a scripted peer on loopback: malformed input, retransmission timing, stale
/// nonces. No Kamailio needed.
@Suite(.timeLimit(.minutes(3)))
struct SIPTestPeerTests {
    func makeAgent(
        port: Int, user: String = "peer", transport: SIPTransportKind = .udp, timers: SIPTimers = SIPTimers(),
        clock: any RuntimeClock = ContinuousClock()
    )
        -> SIPUserAgent
    {
        let account = SIPAccount(
            name: user, registrarHost: "127.0.0.1", registrarPort: port, transport: transport, user: user,
            domain: "127.0.0.1", password: "secret", expires: 300)
        return SIPUserAgent(account: account, timers: timers, logger: testLogger("peer"), clock: clock)
    }

    static func ok(_ request: [UInt8], extra: String = "") -> [UInt8] {
        guard let message = try? SIPParser.parse(datagram: request) else { return [] }
        var response = message.makeResponse(status: 200, reason: "OK", toTag: "peer")
        if !extra.isEmpty { response.headers.add("X-Extra", extra) }
        return response.serialized()
    }

    @Test func malformedResponsesDoNotWedgeTheAgent() async throws {
        let peer = try UDPTestPeer()
        let agent = makeAgent(port: peer.port)
        let script = Task {
            await peer.run { peer -> Int in
                var answered = 0
                for _ in 0..<2 {
                    guard let (request, from) = peer.receive(within: UDPTestPeer.arrivalGuard) else { return answered }
                    let valid = Self.ok(request)
                    let text = String(decoding: valid, as: UTF8.self)
                    peer.send((0..<200).map { _ in UInt8.random(in: 0...255) }, to: from)  // garbage
                    peer.send(Array(valid.prefix(valid.count / 2)), to: from)  // truncated
                    peer.send(Array(text.replacingOccurrences(of: "Content-Length: 0", with: "l: 50").utf8), to: from)
                    peer.send(Array(text.replacingOccurrences(of: "Content-Length: 0", with: "l: x").utf8), to: from)
                    peer.send(Array("\r\n\r\n".utf8), to: from)
                    peer.send(valid, to: from)
                    answered += 1
                }
                return answered
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await agent.registrationStatus.contact != nil)
        try await agent.register(path: loopbackPath())
        #expect(await script.value == 2)
        await agent.close()
    }

    @Test func udpRequestsAreRetransmittedWithTheSameBranchAndDoublingIntervals() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let timers = SIPTimers(t1: .milliseconds(50), t2: .milliseconds(400))
        let agent = makeAgent(port: peer.port, timers: timers, clock: clock)
        let script = Task {
            await peer.run { peer -> [String?] in
                var branches: [String?] = []
                while branches.count < 3, let (request, from) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                    branches.append((try? SIPParser.parse(datagram: request))?.topViaBranch)
                    if branches.count == 3 { peer.send(Self.ok(request), to: from) }
                }
                return branches
            }
        }
        let started = clock.now
        let register = Task { try await agent.register(path: loopbackPath()) }
        // Timer E twice, each once the driver has armed E and F: the third copy leaves at
        // T1 + 2·T1 on the transaction's clock, and only it is answered.
        for _ in 0..<2 {
            await clock.waitForSleepers(count: 2)
            clock.advance(to: clock.nextDeadline ?? clock.now)
        }
        let (result, hung) = await outcome(of: register)
        #expect(!hung, "no answer to the third copy")
        try result.get()
        #expect(clock.now - started == timers.t1 * 3)
        let branches = await script.value
        #expect(branches.count == 3)
        #expect(Set(branches).count == 1)
        #expect(branches.first??.hasPrefix("z9hG4bK") == true)
        await agent.close()
    }

    /// Timers E and F on a `ManualClock`: the agent sends exactly the copies RFC 3261 gives for
    /// these timers, then fails retryably at 64·T1 of the clock, whatever the load.
    @Test func silentPeerTimesOutAfter64T1WithARetryableError() async throws {
        let peer = try UDPTestPeer()
        let timers = SIPTimers(t1: .milliseconds(10), t2: .milliseconds(200))
        // RFC 3261 §17.1.2.2: sent at 0, then again after T1, 2·T1, … (capped at T2) until F at 64·T1.
        var (expectedSends, sentAt, interval) = (1, Duration.zero, timers.t1)
        while sentAt + interval < timers.transactionTimeout {
            (expectedSends, sentAt, interval) = (expectedSends + 1, sentAt + interval, min(interval * 2, timers.t2))
        }
        let clock = ManualClock()
        let agent = makeAgent(port: peer.port, timers: timers, clock: clock)
        let started = clock.now
        let register = Task { try await agent.register(path: loopbackPath()) }
        let fired = await NonInviteClientTransactionTests.fireTimers(
            on: clock, before: started + timers.transactionTimeout)
        clock.advance(to: started + timers.transactionTimeout)
        let (result, hung) = await outcome(of: register)
        #expect(!hung, "timer F did not end the transaction")
        #expect {
            try result.get()
        } throws: { error in
            (error as? PluginError)?.isRetryable == true
        }
        #expect(clock.now - started == timers.transactionTimeout)
        #expect(fired == expectedSends - 1, "timer E fired \(fired) times")
        let count = await NonInviteClientTransactionTests.datagrams(at: peer)
        #expect(count == expectedSends, "sent \(count) copies")
        await agent.close()
    }

    @Test func staleNonceIsRetriedOnceWithTheNewNonce() async throws {
        let peer = try UDPTestPeer()
        let agent = makeAgent(port: peer.port)
        let script = Task {
            await peer.run { peer -> [String?] in
                var authorizations: [String?] = []
                let challenges = [
                    "Digest realm=\"127.0.0.1\", nonce=\"first\", qop=\"auth\"",
                    "Digest realm=\"127.0.0.1\", nonce=\"second\", qop=\"auth\", stale=true",
                ]
                while authorizations.count < 3, let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                    guard let request = try? SIPParser.parse(datagram: bytes) else { continue }
                    authorizations.append(request.headers["Authorization"])
                    if authorizations.count <= 2 {
                        var response = request.makeResponse(status: 401, reason: "Unauthorized", toTag: "p")
                        response.headers.add("WWW-Authenticate", challenges[authorizations.count - 1])
                        peer.send(response.serialized(), to: from)
                    } else {
                        peer.send(Self.ok(bytes), to: from)
                    }
                }
                return authorizations
            }
        }
        try await agent.register(path: loopbackPath())
        let authorizations = await script.value
        #expect(authorizations.count == 3)
        #expect(authorizations.first == .some(nil))
        #expect(authorizations.dropFirst().first??.contains("nonce=\"first\"") == true)
        #expect(authorizations.last??.contains("nonce=\"second\"") == true)
        await agent.close()
    }
}

extension SIPTestPeerTests {
    @Test func brokenStreamFramingClosesTheConnectionAndTheNextRequestReconnects() async throws {
        let peer = try TCPTestPeer()
        let clock = ManualClock()
        let agent = makeAgent(port: peer.port, transport: .tcp, clock: clock)
        let script = Task {
            // Every wait is a hang guard: the agent's timers never fire here (a still clock), so
            // a script that gave up early under load would leave the agent waiting forever.
            let wait = UDPTestPeer.arrivalGuard
            return await peer.run { peer -> Int in
                guard let first = peer.accept(within: wait) else { return 0 }
                defer { close(first) }
                guard peer.receive(on: first, within: wait) != nil else { return 0 }
                // No Content-Length on a stream: framing is lost, the UA must drop the connection.
                peer.send(Array("SIP/2.0 200 OK\r\nCSeq: 1 REGISTER\r\n\r\n".utf8), on: first)
                guard let second = peer.accept(within: wait) else { return 1 }
                defer { close(second) }
                guard let request = peer.receive(on: second, within: wait) else { return 1 }
                peer.send(request.makeResponse(status: 200, reason: "OK", toTag: "p").serialized(), on: second)
                return 2
            }
        }
        let started = clock.now
        // The timers' clock never moves: failing at all means the closed flow ended the
        // transaction, not timer F.
        await #expect(throws: PluginError.self) { try await agent.register(path: loopbackPath()) }
        #expect(clock.now == started, "a closed flow fails at once, not after 64×T1")
        try await agent.register(path: loopbackPath())
        #expect(await script.value == 2)
        #expect(await agent.registrationStatus.contact?.hasSuffix(";transport=tcp") == true)
        await agent.close()
    }
}

extension SIPTestPeerTests {
    @Test func missingPongClosesTheFlowReportsItAndIsNotRetried() async throws {
        let peer = try TCPTestPeer()
        let losses = LossRecorder()
        let account = SIPAccount(
            name: "peer", registrarHost: "127.0.0.1", registrarPort: peer.port, transport: .tcp, user: "peer",
            domain: "127.0.0.1", password: "secret", expires: 300)
        let agent = SIPUserAgent(
            account: account, timers: SIPTimers(pongTimeout: .milliseconds(200)), logger: testLogger("peer")
        ) { losses.record($0) }
        let script = Task {
            await peer.run { peer -> Bool in
                // Generous hang guards: a loaded machine may take seconds to connect.
                guard let connection = peer.accept(within: 30) else { return false }
                defer { close(connection) }
                guard let request = peer.receive(on: connection, within: 30) else { return false }
                peer.send(request.makeResponse(status: 200, reason: "OK", toTag: "p").serialized(), on: connection)
                // Swallow the CRLF ping without answering until the agent gives up.
                return peer.receive(on: connection, within: 3) == nil
            }
        }
        try await agent.register(path: loopbackPath())
        // Retrying the ping cannot help; the reported loss makes the runtime re-register.
        await #expect {
            try await agent.sendFlowPing(path: loopbackPath())
        } throws: { error in
            (error as? PluginError)?.isRetryable == false
        }
        #expect(await agent.boundAddress == nil)
        #expect(await script.value)
        #expect(await eventually(within: .seconds(5)) { !losses.all.isEmpty })
        #expect(losses.all == [[account.registrationService]])
        await agent.close()
    }
}

extension SIPTestPeerTests {
    /// The timers run on a `ManualClock` that never moves, so no timer can end the REGISTER:
    /// only the cancellation can (without it this test hangs until the suite's time limit).
    @Test func cancellingAnActionEndsItPromptlyWithCancellationError() async throws {
        let peer = try UDPTestPeer()
        let clock = ManualClock()
        let agent = makeAgent(port: peer.port, clock: clock)
        let attempt = Task { try await agent.register(path: loopbackPath()) }
        let silent = await peer.run { peer in peer.receive(within: 30) != nil }  // a hang guard only
        #expect(silent)
        await clock.waitForSleepers(count: 2)  // timers E and F armed: the transaction waits
        let started = clock.now
        attempt.cancel()
        let (result, hung) = await outcome(of: attempt)
        #expect(!hung, "the cancellation did not end the action")
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(clock.now == started, "ended by the cancellation, not by a timer")
        await agent.close()
    }
}

extension SIPTestPeerTests {
    @Test func proxyChallengeIsAnsweredWithProxyAuthorizationUsingTheStrongestAlgorithm() async throws {
        let peer = try UDPTestPeer()
        let agent = makeAgent(port: peer.port)
        let script = Task {
            await peer.run { peer -> [String] in
                var seen: [String] = []
                while seen.count < 2, let (bytes, from) = peer.receive(within: UDPTestPeer.arrivalGuard) {
                    guard let request = try? SIPParser.parse(datagram: bytes) else { continue }
                    if seen.isEmpty {
                        seen.append("first")
                        var response = request.makeResponse(status: 407, reason: "Proxy Authentication Required")
                        response.headers.add("Proxy-Authenticate", "Digest realm=\"p\", nonce=\"n1\", qop=\"auth\"")
                        response.headers.add(
                            "Proxy-Authenticate", "Digest realm=\"p\", nonce=\"n2\", qop=\"auth\", algorithm=SHA-256")
                        peer.send(response.serialized(), to: from)
                    } else {
                        let value = request.headers["Proxy-Authorization"] ?? ""
                        let parameters = Dictionary(
                            SIPHeaders.splitList(String(value.dropFirst("Digest ".count))).compactMap { item in
                                let pair = item.split(separator: "=", maxSplits: 1).map(String.init)
                                return pair.count == 2
                                    ? (pair[0], pair[1].replacingOccurrences(of: "\"", with: "")) : nil
                            }, uniquingKeysWith: { first, _ in first })
                        let expected = DigestCredentials(username: "peer", password: "secret").response(
                            to: DigestChallenge(realm: "p", nonce: "n2", algorithm: .sha256), method: "REGISTER",
                            uri: parameters["uri"] ?? "", nonceCount: UInt32(parameters["nc"] ?? "", radix: 16) ?? 0,
                            cnonce: parameters["cnonce"] ?? "")
                        seen.append(
                            "\(parameters["algorithm"] ?? "-") \(parameters["nonce"] ?? "-") "
                                + "\(parameters["response"] == expected) www=\(request.headers["Authorization"] != nil)"
                        )
                        peer.send(Self.ok(bytes), to: from)
                    }
                }
                return seen
            }
        }
        try await agent.register(path: loopbackPath())
        #expect(await script.value == ["first", "SHA-256 n2 true www=false"])
        await agent.close()
    }
}
