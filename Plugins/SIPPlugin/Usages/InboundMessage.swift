import Logging
import ResilienceCore

/// One SIP MESSAGE (RFC 3428) an account received and answered 200: the page a push proxy stored
/// while the device slept (RFC 8599), or any other.
///
/// Invariant: every field comes from the wire and is escaped and cut (`LogText`) when the value
/// is made, so it can go into a log line, a hook's environment or a control reply as it is.
public struct InboundMessage: Hashable, Sendable {
    /// The longest body kept (characters); the rest is cut with `…(+N)`.
    public static let bodyLimit = 1024

    /// The account that received it.
    public var account: String
    /// The From header (escaped, at most 200 characters).
    public var from: String
    /// The Content-Type (escaped, at most 64 characters; empty when absent).
    public var contentType: String
    /// The body as UTF-8 (escaped, at most ``bodyLimit`` characters).
    public var body: String
    /// The Call-ID (escaped, at most 128 characters).
    public var callID: String

    init(account: String, request: SIPMessage) {
        self.account = account
        from = LogText.escaped(request.headers["From"] ?? "", limit: 200)
        contentType = LogText.escaped(request.headers["Content-Type"] ?? "", limit: 64)
        body = LogText.escaped(bytes: request.body, limit: Self.bodyLimit)
        callID = LogText.escaped(request.headers["Call-ID"] ?? "", limit: 128)
    }
}

extension SIPUserAgent {
    /// A MESSAGE outside any dialog (RFC 3428 §7): answered 200 and handed on through ``messages``.
    /// Every one is handed on; the log line is rate-limited (``ThrottledLog``), since anyone who
    /// can reach the proxy can send them.
    func receivedMessage(_ request: SIPMessage) -> SIPMessage {
        let message = InboundMessage(account: account.name, request: request)
        throttledLog.log(
            .info, "sip.message-received", metadata: ["from": "\(message.from)", "bytes": "\(request.body.count)"])
        messageSink.yield(message)
        return request.makeResponse(status: 200, reason: "OK", toTag: randomToken())
    }
}
