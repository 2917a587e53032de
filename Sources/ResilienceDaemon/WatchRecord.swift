public import ResilienceCore

/// One line of `netres watch` output, from a transition or a raw event, with stable fields.
///
/// JSON Lines always carry every key (null when it does not apply), so consumers can rely on
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

    /// The JSON Lines form.
    public func json(clock: WallClock) -> String {
        JSONObject([
            ("ts", .string(clock.rfc3339(at))),
            ("mono_ns", .int(clock.monotonicNanoseconds(at))),
            ("seq", .int(Int64(seq))),
            ("kind", .string(kind.rawValue)),
            ("event", .string(event)),
            ("iface", iface.map(JSONValue.string) ?? .null),
            ("ifindex", ifindex.map { .int(Int64($0)) } ?? .null),
            ("from", from.map(JSONValue.string) ?? .null),
            ("to", to.map(JSONValue.string) ?? .null),
            ("reason", reason.map(JSONValue.string) ?? .null),
            ("addresses", .array(addresses.map(JSONValue.string))),
            ("synthesized", .bool(synthesized)),
            ("downtime_ms", downtimeMilliseconds.map(JSONValue.int) ?? .null),
        ]).rendered
    }

    /// The human form: timestamp, what happened, and the facts that explain it.
    public func human(clock: WallClock) -> String {
        var words = [clock.rfc3339(at), kind == .event ? "  event #\(seq) \(event)" : event.padding(9)]
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
