internal import Logging
internal import ResilienceCore

/// Where every message parsed on one flow goes first (RFC 3261 §17): a response to its client
/// transaction, a request to its server transaction; only the first copy of a request goes on,
/// into the agent's ordered inbound stream with the transaction that answers it.
///
/// An ACK for a non-2xx final is absorbed by its INVITE transaction; an ACK for a 2xx enters the
/// stream without a transaction (for the dialog). A CANCEL that matches an INVITE transaction is
/// answered 200 at once (the INVITE 487 by its transaction, §9.2) and still enters the stream so
/// the call layer sees it; one that matches none is answered by the agent (481).
///
/// Invariants: requests enter the stream in arrival order; a retransmitted request is answered
/// from its transaction and never enters the stream; a request the stream cannot take (the agent
/// is 64 requests behind) is forgotten, so its retransmission is treated as new; strays and
/// drops are logged through the throttled log.
struct TransactionLayer: Sendable {
    let clients: TransactionTable
    let servers: ServerTransactionTable
    let clock: any RuntimeClock
    let log: ThrottledLog
    let inbound: AsyncStream<InboundRequest>.Continuation
    /// Whether the flow is a stream (timer J and K are zero there).
    let reliable: Bool
    /// Hears every response that matched a client transaction: the flow is proven alive.
    let onResponse: @Sendable (ContinuousClock.Instant) -> Void
    /// False while the path is down: every answer (first copy or retransmission) is dropped then.
    var mayReply: @Sendable () -> Bool = { true }

    func receive(_ message: SIPMessage, reply send: @escaping @Sendable (SIPMessage) -> Void) {
        let (mayReply, log) = (self.mayReply, self.log)
        let reply: @Sendable (SIPMessage) -> Void = { answer in
            guard mayReply() else {
                log.log(.info, "sip.reply-held", metadata: Self.describe(answer))
                return
            }
            send(answer)
        }
        let now = clock.now
        guard message.isRequest else {
            if clients.deliver(message, at: now) == .unknown {
                log.log(.notice, "sip.stray-response", metadata: Self.describe(message))
            } else {
                onResponse(now)
            }
            return
        }
        let method = message.method?.uppercased()
        if method == "ACK" {
            if servers.acknowledge(message, at: now) == .forTransactionUser {
                if case .dropped = inbound.yield(InboundRequest(message: message, transaction: nil)) {
                    log.log(.warning, "sip.inbound-overflow", metadata: Self.describe(message))
                }
            }
            return
        }
        switch servers.receive(message, reliable: reliable, at: now, reply: reply) {
        case .new(let transaction):
            if method == "CANCEL", let match = servers.cancel(message, at: now) {
                transaction.respond(message.makeResponse(status: 200, reason: "OK", toTag: match.toTag), at: now)
            }
            if case .dropped = inbound.yield(InboundRequest(message: message, transaction: transaction)) {
                servers.forget(transaction.key)
                log.log(.warning, "sip.inbound-overflow", metadata: Self.describe(message))
            }
        case .retransmission(let answer):
            if let answer { reply(answer) }
        case .refused:
            log.log(.warning, "sip.inbound-refused", metadata: Self.describe(message))
        case .answered(let answer):
            reply(answer)
            var metadata = Self.describe(message)
            metadata["answer"] = "\(answer.status ?? 0)"
            log.log(.warning, "sip.inbound-refused", metadata: metadata)
        }
    }

    /// Method or status, CSeq and Call-ID, escaped: enough to find the message, safe to log.
    static func describe(_ message: SIPMessage) -> Logger.Metadata {
        let what = message.method ?? message.status.map { "\($0)" } ?? "?"
        return [
            "message": "\(LogText.escaped(what, limit: 32))",
            "cseq": "\(LogText.escaped(message.headers["CSeq"] ?? "", limit: 64))",
            "call-id": "\(LogText.escaped(message.headers["Call-ID"] ?? "", limit: 64))",
        ]
    }
}
