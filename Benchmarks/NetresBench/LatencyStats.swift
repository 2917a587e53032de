/// Percentiles of a latency sample, in microseconds.
struct LatencyStats {
    var count: Int
    var p50: Double
    var p99: Double
    var max: Double

    init(_ samples: [Duration]) {
        let micros = samples.map { Double($0.components.attoseconds) / 1e12 + Double($0.components.seconds) * 1e6 }
            .sorted()
        count = micros.count
        func at(_ q: Double) -> Double {
            micros.isEmpty ? .nan : micros[min(micros.count - 1, Int(q * Double(micros.count)))]
        }
        p50 = at(0.50)
        p99 = at(0.99)
        max = micros.last ?? .nan
    }

    /// A Markdown table row: `| label | n | p50 | p99 | max | ratio |`.
    func row(_ label: String, floor: LatencyStats?) -> String {
        let ratio = floor.map { String(format1(p50 / $0.p50)) + "×" } ?? "1×"
        return "| \(label) | \(count) | \(format1(p50)) | \(format1(p99)) | \(format1(max)) | \(ratio) |"
    }
}

func format1(_ value: Double) -> String {
    guard value.isFinite else { return "n/a" }
    let tenths = (value * 10).rounded()
    return "\(Int(tenths) / 10).\(abs(Int(tenths)) % 10)"
}
