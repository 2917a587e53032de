import Foundation
import Glibc

/// rtpengine (Debian `rtpengine`) as the lab's media relay, in the registrar's host beside
/// Kamailio (``RegistrarOptions/mediaRelay``): user-space forwarding only (`--table=-1`, no kernel
/// module), on the registrar's service addresses (IPv4 and IPv6, so it bridges the families),
/// media ports ``mediaPorts``, its ng control socket on ``controlPort`` (Kamailio's `rtpengine`
/// module) and its CLI on ``cliPort`` (`rtpengine-ctl`, the witness of what it relayed).
///
/// Invariants: started before Kamailio (whose module gives up on a relay that does not answer)
/// and stopped with it; its process is the lab's child, killed with its group at the end; its
/// sessions end 60 s after their media stops (`--timeout`), so a lab never keeps one longer.
public struct LabMediaRelay: Hashable, Sendable {
    /// Whether rtpengine, rtpengine-ctl and Kamailio's rtpengine module are installed.
    public static var isInstalled: Bool {
        executable != nil && cli != nil
            && LabRegistrar.modules.map { FileManager.default.fileExists(atPath: "\($0)/rtpengine.so") } == true
    }
    static let executable = LabCommand.executable("rtpengine")
    static let cli = LabCommand.executable("rtpengine-ctl")
    /// The ng control port (UDP) on the registrar's IPv4 address.
    public static let controlPort = 2223
    /// The CLI port (TCP) on the registrar's IPv4 address.
    public static let cliPort = 9900
    /// The relay's media ports: every datagram it sends to a party leaves from one of them.
    public static let mediaPorts = 30_000...30_999

    public let address4: String
    public let address6: String?
    let directory: String

    /// Kamailio's `rtpengine_sock`.
    var controlSocket: String { "udp:\(address4):\(Self.controlPort)" }
    public var logPath: String { directory + "/rtpengine.log" }

    var arguments: [String] {
        [
            Self.executable ?? "rtpengine", "--config-file=none", "--table=-1", "--interface=\(address4)",
        ] + (address6.map { ["--interface=\($0)"] } ?? []) + [
            "--listen-ng=\(address4):\(Self.controlPort)", "--listen-cli=\(address4):\(Self.cliPort)",
            "--port-min=\(Self.mediaPorts.lowerBound)", "--port-max=\(Self.mediaPorts.upperBound)", "--timeout=60",
            "--delete-delay=0", "--foreground", "--log-stderr", "--log-level=6",
            "--pidfile=\(directory)/rtpengine.pid",
        ]
    }
}

extension LabRegistrar {
    /// Starts the media relay when this registrar has one, and waits (≤ 10 s) until its CLI answers.
    func startRelay() async throws {
        guard let relay, relayPID == nil else { return }
        let started = try await placement.spawn(relay.arguments, output: relay.logPath)
        relayPID = started
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if await placement.hasExited(started) { break }
            if (try? await relaySessions()) != nil {
                await placement.record("media relay started")
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        await placement.stop(started)
        relayPID = nil
        let log = (try? String(contentsOfFile: relay.logPath, encoding: .utf8)) ?? ""
        throw NetworkLabError(.timedOut, "rtpengine did not come up within 10 s:\n\(log.suffix(1500))", seed: seed)
    }

    /// Stops the media relay (SIGTERM, SIGKILL to its group after 3 s).
    func stopRelay() async {
        guard let running = relayPID else { return }
        relayPID = nil
        await placement.stop(running)
        await placement.record("media relay stopped")
    }

    /// What the relay holds now (`rtpengine-ctl list sessions all`, then each session's streams
    /// with `list sessions ID`): per party the relay's port, the party's address and the packets, bytes
    /// and errors it received from there. Text for a failure message and for tests that look for a call's session.
    public func relaySessions() async throws -> String {
        guard let relay, let cli = LabMediaRelay.cli else {
            throw NetworkLabError(.unsupported, "this registrar has no media relay", seed: seed)
        }
        let base = [cli, "-ip", relay.address4, "-port", "\(LabMediaRelay.cliPort)"]
        let sessions = try await placement.run(base + ["list", "sessions", "all"], timeout: .seconds(5))
        var text = sessions
        for callID in Self.callIDs(in: sessions).prefix(8) {
            text += try await placement.run(base + ["list", "sessions", callID], timeout: .seconds(5))
        }
        return text
    }

    /// The Call-IDs of the relay's sessions: `callid:   ID | …` lines of `list sessions all`.
    static func callIDs(in listing: String) -> [String] {
        listing.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "callid:") else { return nil }
            let id = line[range.upperBound...].drop { $0 == " " }.prefix { $0 != " " && $0 != "|" }
            return id.isEmpty || id.count > 200 ? nil : String(id)
        }
    }
}
