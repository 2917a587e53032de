import Foundation
import Testing

@testable import NetworkLab

/// Delay without netem: the seeded user-space relay, measured from the phone with real TCP
/// handshakes and datagrams, against the same path without it.
@Suite(.needsLab, .timeLimit(.minutes(2)))
struct DelayFaultTests {
    /// The shortest of `count` TCP connection attempts from the phone to a closed port of the
    /// server's end of wifi (the SYN goes out, the RST comes back), in milliseconds; timed inside
    /// bash with `$EPOCHREALTIME`, so no process start is counted.
    func shortestRoundTrip(_ f: LabFixture, count: Int = 5) async throws -> Double {
        let gateway = await f.lab.addresses(of: f.wifi).gateway4
        let script = """
            for i in $(seq \(count)); do
              s=$EPOCHREALTIME; (exec 3<>/dev/tcp/\(gateway)/9) 2>/dev/null; e=$EPOCHREALTIME
              echo "${s/./} ${e/./}"
            done
            """
        let output = try await f.lab.run(in: f.phone, ["bash", "-c", script], timeout: .seconds(30))
        let samples = output.split(separator: "\n").compactMap { line -> Double? in
            let words = line.split(separator: " ").compactMap { Int64($0) }
            return words.count == 2 ? Double(words[1] - words[0]) / 1000 : nil
        }
        try #require(samples.count == count, "bash printed \(output)")
        return samples.min() ?? 0
    }

    @Test func aDelayHoldsEveryTCPHandshakeAtLeastTheDelayAndLosesNoDatagram() async throws {
        try await withNetworkLab { lab in
            let f = try await LabFixture(lab)
            let baseline = try await shortestRoundTrip(f)
            async let backend = lab.inject(.delay(f.wifi, delay: .milliseconds(150), jitter: .zero, for: .seconds(6)))
            _ = await eventually(within: .seconds(10)) {
                await lab.events().contains { $0.what.hasPrefix("delay relay on") }
            }
            let delayed = try await shortestRoundTrip(f)
            let sent = try await f.datagramsArriving(over: f.wifi, count: 50, settle: .seconds(1))
            #expect(try await backend == .userSpaceRelay)
            // A lower bound and a ratio against the same path measured in the same run, never an upper bound.
            #expect(delayed >= 150, "shortest delayed handshake \(delayed) ms")
            #expect(delayed > baseline * 3, "delayed \(delayed) ms vs \(baseline) ms without the relay")
            #expect(sent == 50, "\(sent) of 50 datagrams arrived through the relay")
            let forwarded = await lab.events().last { $0.what.hasPrefix("delay relay forwarded") }
            #expect(forwarded?.backend == .userSpaceRelay && forwarded?.what.contains("dropped 0") == true)
            // Undone: no redirect, no relay link, and the path is fast again.
            #expect(
                !(try await lab.run(in: f.phone, ["tc", "filter", "show", "dev", "wifi", "egress"])).contains("mirred"))
            #expect(!(try await f.phoneIP("link show")).contains("nld"))
            #expect(try await shortestRoundTrip(f) < delayed)
        }
    }

    @Test func jitterIsSeededKeepsOrderAndStaysWithinTheDelayPlusOrMinusTheJitter() {
        let start = ContinuousClock.now
        func dues(seed: UInt64) -> [Duration] {
            var line = DelayLine(delay: .milliseconds(100), jitter: .milliseconds(40), seed: seed)
            for i in 0..<200 { line.arrive([UInt8(i % 256)], at: start + .milliseconds(i)) }
            var out: [Duration] = []
            var bytes: [UInt8] = []
            for tick in 0..<400 {
                let taken = line.takeDue(at: start + .milliseconds(tick))
                out += taken.map { _ in .milliseconds(tick) }
                bytes += taken.flatMap { $0 }
            }
            #expect(bytes == (0..<200).map { UInt8($0 % 256) }, "frames leave in arrival order")
            return out
        }
        let first = dues(seed: 7)
        #expect(first == dues(seed: 7), "the same seed gives the same schedule")
        #expect(first != dues(seed: 8), "another seed gives another")
        #expect(first.count == 200)
        for (i, due) in first.enumerated() {
            // Earliest possible: arrival + delay - jitter; order can only push a frame later.
            #expect(due >= .milliseconds(i + 60), "frame \(i) left at \(due)")
        }
        #expect(first.last! <= .milliseconds(199 + 140 + 1), "the last frame waits at most delay + jitter")
    }

    @Test func aFullLineDropsAndCountsWhatItCannotHold() {
        var line = DelayLine(delay: .seconds(1), jitter: .zero, seed: 1)
        let now = ContinuousClock.now
        let big = [UInt8](repeating: 0, count: 60_000)
        var accepted = 0
        for _ in 0..<2_000 where line.arrive(big, at: now) { accepted += 1 }
        #expect(accepted * 60_000 <= line.byteCapacity && accepted < 2_000)
        #expect(line.dropped == 2_000 - accepted)
        #expect(line.takeDue(at: now).isEmpty && line.takeDue(at: now + .seconds(1)).count == accepted)
    }
}
