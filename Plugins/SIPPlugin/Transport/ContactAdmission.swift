internal import Logging
internal import NIOCore
internal import ResilienceCore
internal import Synchronization

/// How many requests an account's Contact listener lets in: a token bucket, so a peer that
/// floods the Contact costs a bounded rate of work however fast it sends, while the ordinary
/// traffic of calls (a few requests per second) never waits.
///
/// A pure value with time passed in. Invariants: at most `burst` requests are admitted at once
/// after a quiet spell, and at most `burst + rate × t` within any `t`; time running backwards
/// admits nothing extra.
struct ContactAdmission: Hashable, Sendable {
    /// Requests per second admitted in the long run (at least 1).
    let rate: Int
    /// Requests admitted back to back after a quiet spell (at least 1).
    let burst: Int
    private var tokens: Double
    private var last: ContinuousClock.Instant?

    init(rate: Int = 50, burst: Int = 100) {
        self.rate = max(1, rate)
        self.burst = max(1, burst)
        self.tokens = Double(self.burst)
    }

    /// Whether one request arriving at `now` is let in.
    mutating func admit(at now: ContinuousClock.Instant) -> Bool {
        if let last, now > last {
            let elapsed = now - last
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(Double(burst), tokens + seconds * Double(rate))
        }
        if last.map({ now > $0 }) ?? true { last = now }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}

/// The door of an account's Contact for requests from anywhere (``ContactListener``): admits
/// requests at a bounded rate (``ContactAdmission``), marks their top `Via` with their source
/// (``ReceivedVia``), caps the connections a stream listener holds, and says where a UDP answer
/// goes.
///
/// Invariants: a response arriving at a listener is dropped (this agent sends its requests over
/// its flow to the registrar, whose answers come back there); every drop is counted
/// (``refused``) and logged through the throttled log; at most ``maximumConnections``
/// connections are open at once.
final class ContactGate: Sendable {
    /// Connections one stream listener holds at once.
    static let maximumConnections = 64
    /// A listener's connection that carried nothing this long is closed.
    static let idleConnection = TimeAmount.seconds(120)

    let log: ThrottledLog
    private let admission: Mutex<ContactAdmission>
    private let openConnections = Atomic<Int>(0)
    private let refusedCount = Atomic<Int>(0)

    init(log: ThrottledLog, admission: ContactAdmission = ContactAdmission()) {
        self.log = log
        self.admission = Mutex(admission)
    }

    /// Messages refused at this door: over the rate, responses, requests without a usable Via.
    var refused: Int { refusedCount.load(ordering: .relaxed) }

    /// The request to hand up, with its Via marked; nil when it is refused.
    func admit(_ message: SIPMessage, from source: SocketAddress?) -> SIPMessage? {
        guard message.isRequest else { return refuse(message, "sip.contact-response-dropped") }
        guard admission.withLock({ $0.admit(at: .now) }) else { return refuse(message, "sip.contact-over-rate") }
        guard let host = source?.ipAddress, let port = source?.port,
            let stamped = ReceivedVia.stamped(message, sourceHost: host, sourcePort: port)
        else { return refuse(message, "sip.contact-no-via") }
        return stamped
    }

    /// Where a UDP answer to a request that came from `source` goes (RFC 3261 §18.2.2).
    func replyTarget(for reply: SIPMessage, source: SocketAddress) -> SocketAddress {
        guard let (host, port) = ReceivedVia.responseTarget(of: reply),
            let target = try? SocketAddress(ipAddress: host, port: port)
        else { return source }
        return target
    }

    /// A connection was accepted: false (close it) when the listener holds its maximum already.
    func connectionOpened() -> Bool {
        let before = openConnections.add(1, ordering: .relaxed).oldValue
        guard before < Self.maximumConnections else {
            openConnections.subtract(1, ordering: .relaxed)
            refusedCount.add(1, ordering: .relaxed)
            log.log(.warning, "sip.contact-connections-full", metadata: ["maximum": "\(Self.maximumConnections)"])
            return false
        }
        return true
    }

    func connectionClosed() { openConnections.subtract(1, ordering: .relaxed) }

    private func refuse(_ message: SIPMessage, _ kind: String) -> SIPMessage? {
        refusedCount.add(1, ordering: .relaxed)
        log.log(.notice, kind, metadata: TransactionLayer.describe(message))
        return nil
    }
}
