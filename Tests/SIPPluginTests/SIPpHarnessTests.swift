import NetworkLab
import Testing

/// The sipp harness itself: a start that loses one of its ports to another process (the ports
/// are checked free, then released before sipp binds them) is retried on fresh ports instead
/// of handing the test a sipp that exited and never sends or answers.
@Suite(
    .enabled(if: SIPpHarness.isInstalled, "sipp (Debian sip-tester) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct SIPpHarnessTests {
    @Test func aSippWhoseVideoPortIsTakenIsStartedAgainOnFreshPorts() async throws {
        let media = try LoopbackPort.free(udpAbove: [2])
        // What a server of a test running beside this one may hold: sipp's video RTP port.
        let squatter = try UDPTestPeer(port: media + 2)
        let sipp = try await SIPpHarness.start(
            scenario: "uas-answer-bye", firstPorts: (sip: try LoopbackPort.free(), media: media))
        defer { sipp.stop() }
        #expect(sipp.mediaPort != media, "started again on another media port")
        #expect(await sipp.bound(within: .seconds(30)), "the sipp returned listens: \(sipp.errors.suffix(400))")
        #expect(squatter.port == media + 2)
    }
}
