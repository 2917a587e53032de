import ResilienceTesting
import Testing

@Suite(.timeLimit(.minutes(3)))
struct EventRecorderTests {
    @Test func aWaitResumesOnTheElementThatSatisfiesIt() async throws {
        let (stream, input) = AsyncStream<Int>.makeStream()
        let recorder = EventRecorder.recording(stream)
        let waiting = Task { try await recorder.wait("a 3") { $0.contains(3) } }
        for value in 1...3 { input.yield(value) }
        #expect(try await waiting.value == [1, 2, 3])
        input.yield(4)
        #expect(try await recorder.first(since: 2) { $0 > 1 } == 3, "first match at or after index 2")
        #expect(try await recorder.wait(count: 2, "even numbers") { $0 % 2 == 0 } == [2, 4])
        #expect(recorder.count == 4)
    }

    @Test func aTimeoutSaysWhatWasAwaitedWhereAndEverythingSeen() async throws {
        let (stream, input) = AsyncStream<String>.makeStream()
        let recorder = EventRecorder.recording(stream)
        input.yield("initial eth0")
        input.yield("lost eth0")
        try await recorder.wait { $0.count == 2 }
        let failure = await #expect(throws: EventRecorderTimeout.self) {
            try await recorder.wait("the restore", timeout: .milliseconds(50)) { $0.contains("restored eth0") }
        }
        #expect(failure?.seen == ["initial eth0", "lost eth0"])
        let text = failure?.description ?? ""
        #expect(text.hasPrefix("waiting for the restore (ResilienceRuntimeTests/EventRecorderTests.swift:"), "\(text)")
        #expect(
            text.contains("timed out after 0.05 seconds; saw 2 event(s):\n  1. initial eth0\n  2. lost eth0"), "\(text)"
        )
    }

    @Test func aStreamThatEndsFailsTheWaitAtOnce() async throws {
        let (stream, input) = AsyncStream<Int>.makeStream()
        let recorder = EventRecorder.recording(stream)
        let waiting = Task { try await recorder.wait("a 9", timeout: .seconds(30)) { $0.contains(9) } }
        input.yield(1)
        input.finish()
        let failure = await #expect(throws: EventRecorderTimeout.self) { try await waiting.value }
        #expect(failure?.reason == "the stream finished")
        await #expect(throws: EventRecorderTimeout.self) { try await recorder.wait { $0.contains(9) } }
    }
}
