/// One line of `netres watch` output, from a transition or a raw event, with stable fields.
///
/// The words (``words``) are the one rendering of a transition: `netres watch`, `netres run`'s
/// log and `PathTransition.description` all print them. JSON Lines (ResilienceOutput's
/// `json(clock:)`) always carry every key (null when it does not apply), so consumers can rely on
/// the schema: ts, mono_ns, seq, kind, event, iface, ifindex, from, to, reason, addresses,
/// synthesized, downtime_ms.
public struct WatchRecord: Equatable, Sendable {
    public enum Kind: String, Sendable {
        case transition
        case event
    }

    public var at: ContinuousClock.Instant
    public var seq: UInt64
    public var kind: Kind
    public var event: String
    public var iface: String?
    public var ifindex: Int32?
    public var from: String?
    public var to: String?
    public var reason: String?
    public var addresses: [String]
    public var synthesized: Bool
    public var downtimeMilliseconds: Int64?

    public init(
        at: ContinuousClock.Instant, seq: UInt64, kind: Kind, event: String, iface: String?, ifindex: Int32?,
        from: String?, to: String?, reason: String?, addresses: [String], synthesized: Bool,
        downtimeMilliseconds: Int64?
    ) {
        self.at = at
        self.seq = seq
        self.kind = kind
        self.event = event
        self.iface = iface
        self.ifindex = ifindex
        self.from = from
        self.to = to
        self.reason = reason
        self.addresses = addresses
        self.synthesized = synthesized
        self.downtimeMilliseconds = downtimeMilliseconds
    }

    /// The human form: timestamp, what happened, and the facts that explain it.
    public func human(clock: WallClock) -> String { clock.rfc3339(at) + " " + words }

    /// What happened and the facts that explain it, without the timestamp.
    public var words: String {
        var words = [kind == .event ? "  event #\(seq) \(event)" : event.padding(9)]
        if let iface { words.append(ifindex.map { "\(iface)#\($0)" } ?? iface) }
        if let from, let to {
            words.append("\(from) -> \(to)")
        } else if let to {
            words.append(to)
        }
        if let reason { words.append("(\(reason))") }
        if let downtimeMilliseconds {
            words.append("after \(DurationText.format(.milliseconds(downtimeMilliseconds)))")
        }
        // An address change already shows the addresses in from -> to.
        if !addresses.isEmpty, reason != PathChange.address.rawValue || kind == .event {
            words.append("[" + addresses.joined(separator: " ") + "]")
        }
        if synthesized { words.append("synthesized") }
        return words.joined(separator: " ")
    }
}

extension String {
    fileprivate func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}

extension PathTransition: CustomStringConvertible {
    /// One line, the words `netres watch` prints after the timestamp:
    /// `lost      eth0#3 satisfied -> unsatisfied (no-carrier)`.
    public var description: String { WatchRecord(self, seq: 0).words.trimmingTrailingSpaces() }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
