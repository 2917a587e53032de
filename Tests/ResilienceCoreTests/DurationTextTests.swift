import ResilienceCore
import Testing

struct DurationTextTests {
    @Test(arguments: [
        ("0", Duration.zero), ("2", .seconds(2)), ("1.5", .milliseconds(1500)), ("250ms", .milliseconds(250)),
        ("2s", .seconds(2)), ("10m", .seconds(600)), ("1h", .seconds(3600)), ("1m30s", .seconds(90)),
        (" 3s ", .seconds(3)), ("40us", .microseconds(40)), ("7ns", .nanoseconds(7)),
    ])
    func parsesWhatPeopleWrite(text: String, expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(arguments: ["", "s", "-1s", "2 parsecs", "1x", "abc", "1e400", "99999999999h", "nan"])
    func rejectsWhatIsNotADuration(text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test(arguments: [
        Duration.zero, .milliseconds(250), .seconds(2), .seconds(600), .microseconds(5), .nanoseconds(3),
        .milliseconds(1500), .milliseconds(90_250), .milliseconds(3_723_250), .microseconds(2500),
    ])
    func formatRoundTrips(duration: Duration) {
        #expect(DurationText.parse(DurationText.format(duration)) == duration)
    }

    @Test func formatIsCompact() {
        #expect(DurationText.format(.seconds(600)) == "10m")
        #expect(DurationText.format(.milliseconds(1500)) == "1.5s")
        #expect(DurationText.format(.seconds(90)) == "1m30s")
        #expect(DurationText.format(.milliseconds(3_723_250)) == "1h2m3.25s")
        #expect(DurationText.format(.microseconds(2500)) == "2.5ms")
        #expect(DurationText.format(.zero) == "0s")
    }

    /// A measured downtime prints as a policy would write it, not in nanoseconds.
    @Test func measuredDurationsAreRoundedToMilliseconds() {
        #expect(DurationText.format(.nanoseconds(1_505_709_508)) == "1.506s")
        #expect(DurationText.format(.nanoseconds(250_400_000)) == "250ms")
        #expect(DurationText.format(.nanoseconds(59_999_900_000)) == "1m")
        #expect("\(PathTransition.Kind.restored(downtime: .nanoseconds(1_505_709_508)))" == "restored after 1.506s")
    }
}
