import Foundation

/// One binding at the registrar (`kamcmd ul.dump`).
public struct RegistrarBinding: Hashable, Sendable {
    /// The address of record, e.g. `alice` or `alice@198.19.255.1`.
    public var addressOfRecord: String
    /// The bound Contact URI.
    public var contact: String
    /// Seconds it has left, as the dump said (nil: not a number, e.g. `permanent`).
    public var expiresIn: Int? = nil

    /// The `AoR:`/`Address:` pairs of a `ul.dump`; at most 100,000 (the dump is the registrar's text).
    static func parse(dump: String) -> [RegistrarBinding] {
        var bindings: [RegistrarBinding] = []
        var record = ""
        for line in dump.split(separator: "\n").prefix(1_000_000) where bindings.count < 100_000 {
            let words = line.trimmingCharacters(in: .whitespaces)
            if words.hasPrefix("AoR: ") { record = String(words.dropFirst(5)) }
            if words.hasPrefix("Address: ") {
                bindings.append(RegistrarBinding(addressOfRecord: record, contact: String(words.dropFirst(9))))
            }
            if words.hasPrefix("Expires: "), !bindings.isEmpty, bindings[bindings.count - 1].expiresIn == nil {
                bindings[bindings.count - 1].expiresIn = Int(words.dropFirst(9).prefix(12)).map { min($0, 86_400) }
            }
        }
        return bindings
    }
}

/// One line of the registrar's request log: `NRTEST <kind> name=value … at=<realtime>`.
///
/// `kind` is the request method, `REGISTERED` (a binding saved and confirmed), `QUERIED` (a REGISTER
/// without Contact answered with the bindings), `REPLY<status>` (a
/// reply the proxy relayed for a call, e.g. `REPLY200`; `method` names what it answers), or a fault
/// played: `FAULT503`, `FAULTDROP200`, `FAULT481`, or `PUSH` (the push proxy asked the push service
/// to wake `user`; `kind` in ``fields``), `DELIVERED` (the client `to` answered `status` to a
/// MESSAGE the push proxy relayed), or `GRUU` (an in-dialog request to a GRUU relayed to the
/// contact bound to it; `method` and `gruu`, the Request-URI, in ``fields``).
public struct RegistrarRequest: Hashable, Sendable {
    public var kind: String
    /// The From user.
    public var user: String
    /// `name=value` words of the line (`src`, `proto`, `cseq`, `callid`, `event`, `to`, `expires`, `contact`, `method`, `gruu`).
    public var fields: [String: String]
    /// CLOCK_REALTIME seconds when the registrar saw it (``realtime()`` reads the same clock).
    public var at: Double

    /// Whether the line is a relayed reply (`REPLY<status>`), not a request.
    public var isReply: Bool { kind.hasPrefix("REPLY") }

    /// The Contact of a `REGISTERED` or `FAULTDROP200` line; empty on other lines.
    public var contact: String { fields["contact"] ?? "" }

    /// The `NRTEST` lines of a Kamailio log; other lines are ignored, at most 1,000,000 lines read.
    static func parse(log: String) -> [RegistrarRequest] {
        log.split(separator: "\n").prefix(1_000_000).compactMap { line in
            guard let range = line.range(of: "NRTEST ") else { return nil }
            let words = line[range.upperBound...].split(separator: " ").prefix(32)
            guard let kind = words.first else { return nil }
            var fields: [String: String] = [:]
            for word in words.dropFirst() {
                guard let equals = word.firstIndex(of: "=") else { continue }
                fields[String(word[..<equals])] = String(word[word.index(after: equals)...])
            }
            return RegistrarRequest(
                kind: String(kind), user: fields["user"] ?? "", fields: fields,
                at: fields["at"].flatMap(Double.init) ?? 0)
        }
    }
}
