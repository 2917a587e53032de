import ResilienceCore
import Testing

struct LogTextTests {
    @Test(arguments: [
        ("a\u{1B}[31mred", "a\\x1B[31mred"), ("line\r\nX-Forged: 1", "line\\r\\nX-Forged: 1"), ("nul\u{0}", "nul\\0"),
        ("tab\there", "tab\\there"), ("back\\slash", "back\\\\slash"), ("c1\u{85}", "c1\\x85"),
        ("sep\u{2028}", "sep\\u{2028}"), ("del\u{7F}", "del\\x7F"), ("héllo ✓", "héllo ✓"),
    ])
    func controlCharactersBecomeVisibleEscapes(input: String, expected: String) {
        #expect(LogText.escaped(input) == expected)
    }

    @Test func theResultHoldsNoControlCharacterForAnyByte() {
        let every = String(decoding: (0...255).map { UInt8($0) }, as: UTF8.self)
        let escaped = LogText.escaped(every, limit: 1_000)
        #expect(!escaped.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
    }

    @Test func longInputIsCutAndSaysHowMuch() {
        let escaped = LogText.escaped(String(repeating: "x", count: 1_000), limit: 10)
        #expect(escaped == String(repeating: "x", count: 10) + "…(+990)")
    }

    @Test func invalidUTF8BytesAreReplacedNotPassedThrough() {
        let escaped = LogText.escaped(bytes: [0x41, 0xFF, 0x1B, 0x42])
        #expect(escaped == "A\u{FFFD}\\x1BB")
    }
}

struct LogThrottleTests {
    @Test func aBurstIsCutToTheLimitAndTheNextWindowReportsTheRest() {
        var throttle = LogThrottle(limit: 3, window: .seconds(10))
        let start = ContinuousClock.now
        let verdicts = (0..<100).map { throttle.admit("malformed", at: start + .milliseconds($0)) }
        #expect(verdicts.filter { $0 != .suppress }.count == 3)
        #expect(throttle.pendingSuppressed("malformed") == 97)
        #expect(throttle.admit("malformed", at: start + .seconds(11)) == .log(suppressedBefore: 97))
        #expect(throttle.pendingSuppressed("malformed") == 0)
    }

    @Test func kindsAreCountedApart() {
        var throttle = LogThrottle(limit: 1, window: .seconds(10))
        let now = ContinuousClock.now
        #expect(throttle.admit("a", at: now) == .log(suppressedBefore: 0))
        #expect(throttle.admit("a", at: now) == .suppress)
        #expect(throttle.admit("b", at: now) == .log(suppressedBefore: 0))
    }

    @Test(arguments: [0, -5])
    func aLimitBelowOneStillLogsTheFirst(limit: Int) {
        var throttle = LogThrottle(limit: limit, window: .seconds(1))
        #expect(throttle.admit("k", at: .now) == .log(suppressedBefore: 0))
    }
}
