import Foundation
import Logging
import NetworkLab
import ResilienceCore
import Synchronization
import Testing

@testable import SIPPlugin

/// Subscriptions and presence publication against a scripted notifier on loopback UDP.
@Suite(.timeLimit(.minutes(3)))
struct SIPSubscriptionPeerTests {
    static let service: ServiceID = "peer.subscription.reg"
    static let target = SubscriptionTarget(package: .reg, expires: 300)

    func makeAgent(port: Int) -> SIPUserAgent {
        let account = SIPAccount(
            name: "peer", registrarHost: "127.0.0.1", registrarPort: port, user: "peer", domain: "127.0.0.1",
            password: "secret", expires: 300)
        return SIPUserAgent(account: account, logger: testLogger("subscription"))
    }

    /// A 200 to a SUBSCRIBE that opens the dialog with `tag`, naming the peer as remote target.
    static func accept(_ request: SIPMessage, tag: String, port: Int) -> [UInt8] {
        var response = request.makeResponse(status: 200, reason: "OK", toTag: tag)
        response.headers.add("Contact", "<sip:notifier@127.0.0.1:\(port)>")
        response.headers.add("Expires", "300")
        return response.serialized()
    }

    /// A NOTIFY inside the dialog that `subscribe` opened.
    /// CSeqs for NOTIFYs that do not name one: increasing across the process, as a notifier's
    /// in one dialog are (RFC 3261 §12.2.2 refuses a lower one).
    static let nextCSeq = Atomic<UInt32>(1)

    /// `cseq` nil takes the next of ``nextCSeq``.
    static func notify(for subscribe: SIPMessage, tag: String, state: String, port: Int, cseq: UInt32? = nil)
        -> [UInt8]
    {
        let fromTag = subscribe.headers["From"].flatMap { SIPParameters.parse(afterFirstSemicolon: $0)["tag"] } ?? ""
        var headers = SIPHeaders()
        headers.add("Via", "SIP/2.0/UDP 127.0.0.1:\(port);branch=z9hG4bK\(UInt32.random(in: 0...UInt32.max))")
        headers.add("From", "<sip:peer@127.0.0.1>;tag=\(tag)")
        headers.add("To", "<sip:peer@127.0.0.1>;tag=\(fromTag)")
        headers.add("Call-ID", subscribe.headers["Call-ID"] ?? "")
        headers.add("CSeq", "\(cseq ?? nextCSeq.add(1, ordering: .relaxed).oldValue) NOTIFY")
        headers.add("Contact", "<sip:notifier@127.0.0.1:\(port)>")
        headers.add("Event", "reg")
        headers.add("Subscription-State", state)
        headers.add("Content-Type", "application/reginfo+xml")
        var message = SIPMessage(startLine: .request(method: "NOTIFY", uri: "sip:peer@127.0.0.1"), headers: headers)
        message.body = Array("<reginfo/>".utf8)
        return message.serialized()
    }

    /// The next request or response the peer receives, parsed; nil after `seconds` (a script's
    /// first wait is a hang guard: see `UDPTestPeer.receive(within:)`).
    static func nextRequest(_ peer: UDPTestPeer, within seconds: Double = 5) -> (SIPMessage, sockaddr_in)? {
        guard let (bytes, from) = peer.receive(within: seconds), let message = try? SIPParser.parse(datagram: bytes)
        else {
            return nil
        }
        return (message, from)
    }

    /// The subscription's status once it has seen `count` NOTIFYs, or after 5 s.
    func waitForNotifies(_ agent: SIPUserAgent, count: Int) async -> SubscriptionStatus {
        var status = await agent.subscriptionStatus(Self.service)
        _ = await eventually(within: .seconds(5), every: .milliseconds(20)) {
            status = await agent.subscriptionStatus(Self.service)
            return status.notifyCount >= count
        }
        return status
    }

    @Test func subscribeRefreshRecreateOn481AndUnsubscribe() async throws {
        let peer = try UDPTestPeer()
        let agent = makeAgent(port: peer.port)
        let port = peer.port
        let script = Task {
            await peer.run { peer -> [String] in
                var log: [String] = []
                // 1: initial SUBSCRIBE -> 200 + NOTIFY active.
                guard let (first, from) = Self.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
                else { return log }
                log.append(
                    "\(first.method!) to-tag=\(first.headers["To"]!.contains("tag=")) event=\(first.headers["Event"]!)")
                peer.send(Self.accept(first, tag: "srv", port: port), to: from)
                peer.send(Self.notify(for: first, tag: "srv", state: "active;expires=300", port: port), to: from)
                guard let (notifyAnswer, _) = Self.nextRequest(peer) else { return log }
                log.append("notify-answer \(notifyAnswer.status ?? 0)")
                // 2: refresh inside the dialog -> 481; 3: new SUBSCRIBE -> 200.
                guard let (refresh, _) = Self.nextRequest(peer) else { return log }
                log.append(
                    "refresh uri=\(extractURI(refresh.startLine.uri)) to-tag=\(refresh.headers["To"]!.contains("tag=srv"))"
                )
                peer.send(
                    refresh.makeResponse(status: 481, reason: "Subscription Does Not Exist").serialized(), to: from)
                guard let (again, _) = Self.nextRequest(peer) else { return log }
                log.append(
                    "recreate to-tag=\(again.headers["To"]!.contains("tag=")) same-call=\(again.headers["Call-ID"] == first.headers["Call-ID"])"
                )
                peer.send(Self.accept(again, tag: "srv2", port: port), to: from)
                // 4: unsubscribe.
                guard let (end, _) = Self.nextRequest(peer) else { return log }
                log.append(
                    "unsubscribe expires=\(end.headers["Expires"] ?? "-") to-tag=\(end.headers["To"]!.contains("tag=srv2"))"
                )
                peer.send(end.makeResponse(status: 200, reason: "OK").serialized(), to: from)
                return log
            }
        }
        let path = loopbackPath()
        try await agent.subscribe(Self.target, service: Self.service, path: path)
        let status = await waitForNotifies(agent, count: 1)
        #expect(status.state == .active)
        #expect(status.lastBody == Array("<reginfo/>".utf8))
        try await agent.subscribe(Self.target, service: Self.service, path: path)
        try await agent.unsubscribe(service: Self.service, path: path)
        #expect(
            await agent.subscriptionStatus(Self.service).state
                == .terminated(reason: "unsubscribed", resubscribe: true))
        let log = await script.value
        #expect(
            log == [
                "SUBSCRIBE to-tag=false event=reg",
                "notify-answer 200",
                "refresh uri=sip:notifier@127.0.0.1:\(port) to-tag=true",
                "recreate to-tag=false same-call=false",
                "unsubscribe expires=0 to-tag=true",
            ])
        await agent.close()
    }

    @Test func rejectedSubscriptionStopsAndUnknownNotifyGets481() async throws {
        let peer = try UDPTestPeer()
        let agent = makeAgent(port: peer.port)
        let port = peer.port
        let script = Task {
            await peer.run { peer -> [Int] in
                guard let (subscribe, from) = Self.nextRequest(peer, within: UDPTestPeer.arrivalGuard)
                else { return [] }
                peer.send(Self.accept(subscribe, tag: "srv", port: port), to: from)
                peer.send(
                    Self.notify(for: subscribe, tag: "srv", state: "terminated;reason=rejected", port: port), to: from)
                var statuses: [Int] = []
                if let (answer, _) = Self.nextRequest(peer) { statuses.append(answer.status ?? 0) }
                var stranger = subscribe
                stranger.headers.set("Call-ID", "unknown-call")
                peer.send(Self.notify(for: stranger, tag: "x", state: "active", port: port), to: from)
                if let (answer, _) = Self.nextRequest(peer) { statuses.append(answer.status ?? 0) }
                // Nothing else may arrive: a rejected subscription is not retried.
                if let (extra, _) = Self.nextRequest(peer) { statuses.append(extra.status ?? -1) }
                return statuses
            }
        }
        try await agent.subscribe(Self.target, service: Self.service, path: loopbackPath())
        let status = await waitForNotifies(agent, count: 1)
        #expect(status.state == .terminated(reason: "rejected", resubscribe: false))
        await #expect {
            try await agent.subscribe(Self.target, service: Self.service, path: loopbackPath())
        } throws: { error in
            (error as? PluginError)?.isRetryable == false
        }
        #expect(await script.value == [200, 481])
        await agent.close()
    }

    @Test func publishRefreshesWithSIPIfMatchAndRepublishesAfter412() async throws {
        let peer = try UDPTestPeer()
        let agent = makeAgent(port: peer.port)
        let script = Task {
            await peer.run { peer -> [String] in
                var log: [String] = []
                for (index, status) in [200, 412, 200, 200].enumerated() {
                    guard let (request, from) = Self.nextRequest(peer) else { return log }
                    let body = request.body.isEmpty ? "empty" : "pidf"
                    log.append("\(request.headers["SIP-If-Match"] ?? "-") \(body) \(request.headers["Expires"]!)")
                    var response = request.makeResponse(status: status, reason: status == 200 ? "OK" : "Failed")
                    if status == 200 { response.headers.add("SIP-ETag", "e\(index)") }
                    peer.send(response.serialized(), to: from)
                }
                return log
            }
        }
        let path = loopbackPath()
        try await agent.publishPresence(PresenceDocument(isOpen: true, note: "at <desk>"), path: path)
        #expect(await agent.publicationETag == "e0")
        try await agent.publishPresence(nil, path: path)
        #expect(await agent.publicationETag == "e2")
        try await agent.removePresence(path: path)
        #expect(await agent.publicationETag == nil)
        #expect(await script.value == ["- pidf 600", "e0 empty 600", "- pidf 600", "e2 empty 0"])
        await agent.close()
    }
}

extension SIPMessage.StartLine {
    var uri: String {
        if case .request(_, let uri) = self { return uri }
        return ""
    }
}
