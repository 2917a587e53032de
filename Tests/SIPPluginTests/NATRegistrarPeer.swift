import Foundation
import Synchronization

@testable import SIPPlugin

/// A scripted UDP registrar on loopback that plays the NAT in front of it: each REGISTER is
/// answered 200 OK (`Flow-Timer: 1`, so the agent's keep-alive is STUN) with a top Via naming
/// `publicHost` and ``State/registerPort`` as the client's address (RFC 3581 `received`/`rport`),
/// and each STUN Binding request with `publicHost` and ``State/stunPort`` (RFC 5389
/// MAPPED-ADDRESS). The test moves the ports to play a rebinding, or a registrar that sees the
/// flow apart from the keep-alive, and holds REGISTERs (STUN requests) unanswered while
/// ``State/holding`` (``State/holdingSTUN``).
///
/// Invariant: ``serve()`` ends when ``stop()`` is called or after 120 s (a hang guard), and
/// answers every held REGISTER before it ends.
final class NATRegistrarPeer: Sendable {
    struct State {
        var registerPort = 40_000
        var stunPort = 40_000
        var holding = false
        var holdingSTUN = false
        var stopped = false
        /// What came in, in order: `REGISTER`, `STUN` or another method.
        var seen: [String] = []
    }

    let peer: UDPTestPeer
    let publicHost: String
    let state = Mutex(State())

    init(publicHost: String = "198.51.100.7") throws {
        peer = try UDPTestPeer()
        self.publicHost = publicHost
    }

    var port: Int { peer.port }
    var registers: Int { state.withLock { $0.seen.filter { $0 == "REGISTER" }.count } }
    var seen: [String] { state.withLock { $0.seen } }
    func update(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }
    func stop() { update { $0.stopped = true } }

    /// Answers everything until ``stop()``.
    func serve() -> Task<Void, Never> {
        Task {
            await peer.run { [self] peer in
                var held: [(SIPMessage, sockaddr_in)] = []
                var heldSTUN: [([UInt8], sockaddr_in)] = []
                let deadline = Date().addingTimeInterval(120)
                while Date() < deadline {
                    let (holding, holdingSTUN, stopped) = state.withLock { ($0.holding, $0.holdingSTUN, $0.stopped) }
                    if !holding || stopped {
                        for (request, from) in held { peer.send(answer(request), to: from) }
                        held.removeAll()
                    }
                    if !holdingSTUN || stopped {
                        for (request, from) in heldSTUN { peer.send(bindingAnswer(to: request), to: from) }
                        heldSTUN.removeAll()
                    }
                    if stopped { return }
                    guard let (bytes, from) = peer.receive(within: 0.1) else { continue }
                    // What the test set while the read waited counts for this datagram.
                    let (holdsRegister, holdsSTUN) = state.withLock { ($0.holding, $0.holdingSTUN) }
                    if STUNMessage.looksLikeSTUN(bytes) {
                        update { $0.seen.append("STUN") }
                        if holdsSTUN {
                            heldSTUN.append((bytes, from))
                        } else {
                            peer.send(bindingAnswer(to: bytes), to: from)
                        }
                        continue
                    }
                    guard let request = try? SIPParser.parse(datagram: bytes) else { continue }
                    update { $0.seen.append(request.method ?? "?") }
                    if request.method == "REGISTER", holdsRegister {
                        held.append((request, from))
                    } else {
                        peer.send(answer(request), to: from)
                    }
                }
            }
        }
    }

    /// 200 OK; a REGISTER's names the client as the NAT maps it now and echoes its bindings.
    private func answer(_ request: SIPMessage) -> [UInt8] {
        var response = request.makeResponse(status: 200, reason: "OK", toTag: "registrar")
        guard request.method == "REGISTER", let via = request.headers["Via"] else { return response.serialized() }
        let port = state.withLock { $0.registerPort }
        let received = publicHost.contains(":") ? "[\(publicHost)]" : publicHost
        response.headers.set("Via", via.replacingOccurrences(of: ";rport", with: ";received=\(received);rport=\(port)"))
        for contact in request.headers.values("Contact") {
            response.headers.add("Contact", "<\(extractURI(contact))>;expires=300")
        }
        response.headers.add("Flow-Timer", "1")
        return response.serialized()
    }

    /// A Binding success with MAPPED-ADDRESS (RFC 5389 §15.1) `publicHost`:``State/stunPort``.
    private func bindingAnswer(to request: [UInt8]) -> [UInt8] {
        let port = UInt16(state.withLock { $0.stunPort })
        var address = [UInt8](repeating: 0, count: 16)
        let v4 = inet_pton(AF_INET, publicHost, &address) == 1
        if !v4 { _ = inet_pton(AF_INET6, publicHost, &address) }
        let family: UInt8 = v4 ? 0x01 : 0x02
        let value = [0, family, UInt8(port >> 8), UInt8(port & 0xFF)] + address.prefix(v4 ? 4 : 16)
        let attribute = [0x00, 0x01, 0x00, UInt8(value.count)] + value
        return [0x01, 0x01, 0x00, UInt8(attribute.count)] + Array(request[4..<20]) + attribute
    }
}
