import Foundation
import Logging
import ResilienceCore
import ResilienceDaemon
import ResilienceRuntime
import ResilienceTesting
import ServiceLifecycle
import Synchronization
import Testing

@testable import SIPPlugin

/// `netres run` in-process (config file → ``Daemon``, the real SIP plugin and manager) against a
/// scripted registrar on loopback that is hostile or broken: a 503 with the largest Retry-After,
/// a 5 s grant, silence. The network source is scripted (a satisfied loopback path).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DaemonHostileRegistrarTests {
    actor Lines {
        var all: [String] = []
        func append(_ line: String) { all.append(line) }
    }

    /// Tells a peer thread to stop.
    final class StopFlag: Sendable {
        private let state = Mutex(false)
        func set() { state.withLock { $0 = true } }
        var isSet: Bool { state.withLock { $0 } }
    }

    /// What the peer does with each REGISTER: nil drops it.
    typealias Answer = @Sendable (SIPMessage) -> SIPMessage?

    /// Runs a peer that answers REGISTERs with `answer` for at most `seconds`, until `stop` is set,
    /// and returns how many REGISTER transactions (distinct branches) it saw.
    static func serve(
        _ peer: UDPTestPeer, seconds: Double, stop: StopFlag, answer: @escaping Answer
    ) -> Task<Int, Never> {
        Task {
            await peer.run { peer in
                var branches: Set<String> = []
                let end = Date().addingTimeInterval(seconds)
                while Date() < end, !stop.isSet {
                    guard let (bytes, from) = peer.receive(within: 0.1),
                        let request = try? SIPParser.parse(datagram: bytes), request.method == "REGISTER"
                    else { continue }
                    branches.insert(request.headers["Via"] ?? "")
                    if let response = answer(request) { peer.send(response.serialized(), to: from) }
                }
                return branches.count
            }
        }
    }

    /// A daemon for one account at `port`, writing its log lines to `lines`.
    func makeDaemon(port: Int, lines: Lines, directory: URL) throws -> Daemon {
        let configPath = directory.appendingPathComponent("netres.yaml").path
        try """
        log-format: json
        control-socket: ctl.sock
        accounts:
          - { name: hostile, registrar: 127.0.0.1, port: \(port), user: hostile, domain: 127.0.0.1, password: pw,
              flow-ping: off }
        """.write(toFile: configPath, atomically: true, encoding: .utf8)
        var logger = Logger(label: "daemon-hostile")
        logger.logLevel = .warning
        return try Daemon(
            config: try DaemonConfigFile.load(path: configPath), source: ScriptedNetworkSource(path: loopbackPath()),
            output: { await lines.append($0) }, logger: logger)
    }

    /// A started daemon running in its service group.
    struct Launched {
        let daemon: Daemon
        let lines: Lines
        let group: ServiceGroup
        let task: Task<Void, any Error>

        /// SIGTERM's path: graceful shutdown of the group, then ``Daemon/stop()``.
        func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
            await daemon.stop()
        }
    }

    func launch(port: Int, directory: URL) async throws -> Launched {
        let lines = Lines()
        let daemon = try makeDaemon(port: port, lines: lines, directory: directory)
        try await daemon.start()
        let group = daemon.makeGroup(signals: [])
        return Launched(daemon: daemon, lines: lines, group: group, task: Task { try await group.run() })
    }

    func temporaryDirectory() throws -> URL {
        let directory = URL(fileURLWithPath: "/tmp/netres-hostile-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// `503 Retry-After: 9223372036854775807` trapped the daemon about a second later. Now it
    /// lives on and schedules the retry within the backoff cap (120 s ± 20 %).
    @Test func aRetryAfterOfInt64MaxNeitherKillsTheDaemonNorParksTheAccount() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try UDPTestPeer()
        let stop = StopFlag()
        let served = Self.serve(peer, seconds: 20, stop: stop) { request in
            var response = request.makeResponse(status: 503, reason: "Service Unavailable", toTag: "hostile")
            response.headers.add("Retry-After", "9223372036854775807")
            return response
        }
        let launched = try await launch(port: peer.port, directory: directory)
        var retrying: String?
        for _ in 0..<100 where retrying == nil {
            try await Task.sleep(for: .milliseconds(50))
            retrying = await launched.lines.all.first { $0.contains(#""outcome":"retrying"#) }
        }
        // Past the second after the 503 in which the old executor trapped: still alive, still serving.
        try await Task.sleep(for: .milliseconds(1500))
        let status = await launched.daemon.handle(line: "status --json")
        #expect(status.contains(#""app_state""#), "the daemon answers after the 503: \(status)")
        let retry = try #require(await launched.daemon.manager.status().actions["hostile.registration"]?.retryAt)
        #expect(retry - .now <= .seconds(144), "retry in \(retry - .now)")
        #expect(retrying != nil)
        try await launched.stop()
        stop.set()
        #expect(await served.value >= 1)
    }

    /// A registrar granting 5 s (below the 30 s refresh margin) made the daemon refresh without
    /// pause. Over 15 s the refreshes are now bounded by the floors (half the lifetime, 10 s
    /// apart): the first REGISTER, one at 2.5 s, one at 12.5 s, plus slack for the unregister.
    @Test func aFiveSecondGrantGivesABoundedRefreshCount() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try UDPTestPeer()
        let stop = StopFlag()
        let served = Self.serve(peer, seconds: 30, stop: stop) { request in
            var response = request.makeResponse(status: 200, reason: "OK", toTag: "short")
            if let contact = request.headers["Contact"] {
                let uri = contact.split(separator: ";").first.map(String.init) ?? contact
                response.headers.add("Contact", "\(uri);expires=5")
            }
            response.headers.add("Expires", "5")
            return response
        }
        let launched = try await launch(port: peer.port, directory: directory)
        try await Task.sleep(for: .seconds(15))
        try await launched.stop()
        stop.set()
        // Counted at the peer, the unregister on shutdown included; before the floors: hundreds.
        let registers = await served.value
        print("REGISTERs in 15 s against a 5 s grant, unregister included: \(registers)")
        #expect(registers >= 3 && registers <= 5, "REGISTERs in 15 s against a 5 s grant: \(registers)")
    }

    /// The README promises a stop within 5 s of SIGTERM whatever the registrar does; against
    /// one that answers nothing, teardown's unregister can never finish.
    @Test func shutdownAgainstASilentRegistrarStaysWithinTheDocumentedBound() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let peer = try UDPTestPeer()
        let stop = StopFlag()
        let served = Self.serve(peer, seconds: 40, stop: stop) { _ -> SIPMessage? in nil }
        let launched = try await launch(port: peer.port, directory: directory)
        try await Task.sleep(for: .seconds(1))
        let start = ContinuousClock.now
        try await launched.stop()
        let took = ContinuousClock.now - start
        stop.set()
        _ = await served.value
        print("shutdown against a silent registrar took \(took)")
        #expect(took <= Daemon.shutdownBound, "shutdown took \(took)")
    }
}
