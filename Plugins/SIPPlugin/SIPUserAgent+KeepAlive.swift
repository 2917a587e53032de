internal import Logging
public import ResilienceCore

extension SIPUserAgent {
    /// Sends an RFC 5626 §4.4.1 CRLF keep-alive on a stream flow and waits for the CRLF pong.
    /// Datagram flows are kept by refreshes (no STUN here), so this is a no-op for UDP.
    /// - Throws: a retryable ``PluginError`` when no pong arrives within `pongTimeout`; the flow
    ///   is closed then, so the next action opens a new one and re-registers through it.
    public func sendKeepAlive(path: NetworkPath) async throws {
        let flow = try await flow(for: path)
        guard flow.kind == .tcp else { return }
        pongGeneration += 1
        let id = pongGeneration
        let timeout = timers.pongTimeout
        // The pong may be handled while this actor waits for the send: count pongs so one that
        // arrives before the waiter is installed still counts.
        let pongsBefore = pongCount
        try await flow.send(bytes: Array("\r\n\r\n".utf8))
        let answered =
            pongCount > pongsBefore
            ? true
            : await withCheckedContinuation { continuation in
                pongWaiter?.continuation.resume(returning: false)
                pongWaiter = (id, continuation)
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    await self?.endPongWait(id: id, answered: false)
                }
            }
        guard answered else {
            logger.warning("sip.keep-alive-timeout", metadata: ["timeout": "\(timeout)"])
            if transport === flow {
                transport = nil
                table.flowClosed(ObjectIdentifier(flow))
            }
            await flow.close()
            throw PluginError("keep-alive: no pong within \(timeout); flow closed")
        }
    }

    func pongReceived() {
        pongCount &+= 1
        guard let waiter = pongWaiter else { return }
        endPongWait(id: waiter.id, answered: true)
    }

    func endPongWait(id: UInt64, answered: Bool) {
        guard let waiter = pongWaiter, waiter.id == id else { return }
        pongWaiter = nil
        waiter.continuation.resume(returning: answered)
    }
}
