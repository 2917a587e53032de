/// The last bytes a hook printed, kept in memory of a fixed size however much it prints.
///
/// Invariants: never holds more than `capacity` bytes; ``bytes`` are the last ones appended, in
/// order; ``total`` counts every byte ever appended (saturating), so a log can say how much was cut.
public struct OutputTail: Sendable {
    public let capacity: Int
    private var ring: [UInt8]
    private var start = 0
    public private(set) var total: UInt64 = 0

    public init(capacity: Int) {
        self.capacity = max(capacity, 1)
        ring = []
        ring.reserveCapacity(self.capacity)
    }

    /// Keeps the last `capacity` bytes of what was kept plus `chunk`.
    public mutating func append(_ chunk: some Collection<UInt8>) {
        total = total.addingReportingOverflow(UInt64(chunk.count)).overflow ? .max : total + UInt64(chunk.count)
        for byte in chunk.suffix(capacity) {
            if ring.count < capacity {
                ring.append(byte)
            } else {
                ring[start] = byte
                start = (start + 1) % capacity
            }
        }
    }

    /// The kept bytes, oldest first.
    public var bytes: [UInt8] { Array(ring[start...] + ring[..<start]) }

    /// The last `count` lines of the kept bytes, joined by ` | ` so one hook run stays one log line
    /// (a hook cannot forge log lines); control characters are escaped.
    public func lastLines(_ count: Int) -> String {
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
        return lines.suffix(count).map { line in
            line.unicodeScalars.map {
                $0.value < 0x20 || $0.value == 0x7f ? "\\u{\(String($0.value, radix: 16))}" : "\($0)"
            }
            .joined()
        }.joined(separator: " | ")
    }
}
