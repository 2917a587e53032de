/// One line of the lab's timeline: what happened, when (since the lab started), and by which means.
public struct LabEvent: Hashable, Sendable, CustomStringConvertible {
    /// Time since the lab was made.
    public var at: Duration
    /// CLOCK_REALTIME seconds when it happened (``realtime()``), the clock of
    /// ``RegistrarRequest/at``: whether the registrar saw a request before or after a step.
    public var realtime: Double
    /// What happened, e.g. `carrier-loss wifi for 2s: begin`.
    public var what: String
    /// How it was done.
    public var backend: FaultBackend

    public var description: String {
        "+\(milliseconds(at))ms \(what) [\(backend)]"
    }
}

/// The means a fault ran by, so a result always says what the machine actually did.
public struct FaultBackend: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// `ip link`/`ip address`/`ip route` commands.
    public static let iproute2 = FaultBackend(rawValue: "iproute2")
    /// One `ip -batch` process: changes faster than any reader drains them.
    public static let iproute2Batch = FaultBackend(rawValue: "iproute2-batch")
    /// An nftables table in the lab's namespaces (loss, partitions, a dead path; no netem needed).
    public static let nftables = FaultBackend(rawValue: "nftables")
    /// A token-bucket qdisc (`tc qdisc … tbf`).
    public static let tbf = FaultBackend(rawValue: "tc-tbf")
    /// The lab's seeded user-space delay relay (a tc `mirred` redirect into a packet socket);
    /// needs no netem.
    public static let userSpaceRelay = FaultBackend(rawValue: "user-space-relay")
    /// Kamailio: a process restart, or a fault route switched through its `htable`.
    public static let kamailio = FaultBackend(rawValue: "kamailio")
}

/// Text from processes and files made safe for one log line.
enum LabText {
    /// `text` in double quotes with control characters, quotes and non-ASCII escaped, at most 200 characters.
    static func quoted(_ text: some StringProtocol) -> String {
        var out = "\""
        for scalar in text.unicodeScalars.prefix(200) {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case " "..."~": out.unicodeScalars.append(scalar)
            default: out += "\\u{\(String(scalar.value, radix: 16))}"
            }
        }
        return out + (text.unicodeScalars.count > 200 ? "…\"" : "\"")
    }
}

extension NetworkLab {
    /// Everything that happened in the lab so far, in order.
    public func events() -> [LabEvent] { timeline }

    func record(_ what: String, backend: FaultBackend) {
        timeline.append(
            LabEvent(at: ContinuousClock.now - started, realtime: realtime(), what: what, backend: backend)
        )
    }
}
