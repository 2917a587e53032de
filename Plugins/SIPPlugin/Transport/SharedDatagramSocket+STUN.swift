internal import ResilienceCore
internal import Synchronization

/// What a shared socket learned about its NAT mapping, and the STUN transactions awaiting answers.
struct NATObservation: ~Copyable {
    /// The socket's address and port as the registrar last saw them (`host:port`): a STUN
    /// answer's mapped address, or the `received`/`rport` of a response's top Via (RFC 3581).
    var mapped: String?
    /// Binding requests awaiting their answer, by transaction ID; at most ``limit``.
    var waiting: [[UInt8]: CheckedContinuation<String?, Never>] = [:]
    static let limit = 8
}

extension SharedDatagramSocket {
    /// The public `host:port` the registrar last reported for this socket.
    var observedMapping: String? { nat.withLock { $0.mapped } }

    /// Records what the registrar saw of this socket (a response's Via, a STUN answer).
    func observeMapping(_ mapped: String?) {
        guard let mapped else { return }
        nat.withLock { $0.mapped = mapped }
    }

    /// One STUN Binding transaction with the registrar on this socket (RFC 5626 §4.4.1 keep-alive):
    /// the request goes out at once and again after 0.5 s, 1.5 s, … while no answer came, until
    /// `timeout` on `clock`. The mapped address of a success (also recorded, see
    /// ``observedMapping``); nil when nothing or an error came back in time.
    func stunBinding(timeout: Duration, clock: any RuntimeClock) async -> String? {
        let id = (0..<12).map { _ in UInt8.random(in: 0...255) }
        let request = STUNMessage.bindingRequest(transactionID: id)
        let answer = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            let admitted = nat.withLock { state -> Bool in
                guard state.waiting.count < NATObservation.limit else { return false }
                state.waiting[id] = continuation
                return true
            }
            guard admitted else { return continuation.resume(returning: nil) }
            Task {
                var interval = Duration.milliseconds(500)
                var elapsed = Duration.zero
                for _ in 0..<8 where elapsed < timeout {
                    guard nat.withLock({ $0.waiting[id] != nil }) else { return }
                    try? await send(request)
                    let step = min(interval, timeout - elapsed)
                    guard (try? await clock.sleep(for: step)) != nil else { break }
                    elapsed += step
                    interval *= 2
                }
                finishBinding(id, mapped: nil)
            }
        }
        observeMapping(answer)
        return answer
    }

    /// A datagram that looks like STUN arrived: the answer of a waiting Binding request ends it;
    /// anything else is dropped.
    func stunReceived(_ bytes: [UInt8]) {
        guard let answer = STUNMessage.parseBindingAnswer(bytes) else { return }
        finishBinding(answer.transactionID, mapped: answer.mapped)
    }

    private func finishBinding(_ id: [UInt8], mapped: String?) {
        let waiter = nat.withLock { $0.waiting.removeValue(forKey: id) }
        waiter?.resume(returning: mapped)
    }
}
