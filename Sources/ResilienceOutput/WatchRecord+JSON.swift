package import ResilienceCore

extension WatchRecord {
    /// The JSON Lines form.
    package func json(clock: WallClock) -> String {
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
}
