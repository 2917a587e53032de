import ChildProcesses
import Foundation
import Glibc

/// A real Kamailio registrar on loopback, started from `Resources/kamailio.cfg.template` in a
/// temporary folder of its own and stopped by PID.
final class KamailioHarness: Sendable {
    let directory: URL
    let port: Int
    /// Kamailio's main process; it leads its own process group, so the group id is the same.
    let pid: pid_t

    static let executable = ["/usr/sbin/kamailio", "/usr/local/sbin/kamailio"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    static let kamcmd = ["/usr/sbin/kamcmd", "/usr/local/sbin/kamcmd"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    /// Kamailio's module folder (Debian multiarch or a source install).
    static let modules = [
        "/usr/lib/x86_64-linux-gnu/kamailio/modules", "/usr/lib/aarch64-linux-gnu/kamailio/modules",
        "/usr/lib64/kamailio/modules", "/usr/lib/kamailio/modules", "/usr/local/lib64/kamailio/modules",
    ].first { FileManager.default.fileExists(atPath: "\($0)/registrar.so") }
    /// Empty db_text tables shipped by Debian's `kamailio` package.
    static let dbTextTables = "/usr/share/kamailio/dbtext/kamailio"
    static var isInstalled: Bool {
        executable != nil && kamcmd != nil && modules != nil
            && FileManager.default.fileExists(atPath: "\(dbTextTables)/presentity")
    }
    /// Whether `::1` can be bound here (IPv6 may be disabled in containers).
    static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        } == 0
    }()
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    static var template: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Resources/kamailio.cfg.template")
    }

    var socketPath: String { directory.appendingPathComponent("ctl.sock").path }
    var logPath: String { directory.appendingPathComponent("kamailio.log").path }

    /// Starts Kamailio and waits (at most 10 s) until its control socket answers.
    ///
    /// Spawned with `posix_spawn`, not Foundation's `Process`: Kamailio closes inherited file
    /// descriptors at start-up, which makes `Process` believe it exited and block in `waitpid`.
    /// - Parameters:
    ///   - port: reuse a port (to restart a registrar where clients expect it).
    ///   - authAlgorithm: the digest algorithm Kamailio challenges with: "" (MD5) or "SHA-256".
    init(port reusedPort: Int? = nil, authAlgorithm: String = "") throws {
        guard let executable = Self.executable else { throw HarnessError("kamailio is not installed") }
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("nr-kam-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try reusedPort ?? freePort()
        var config = try String(contentsOf: Self.template, encoding: .utf8)
            .replacingOccurrences(of: "@ADDR@", with: "127.0.0.1")
            .replacingOccurrences(of: "@PORT@", with: "\(port)")
            .replacingOccurrences(of: "@DIR@", with: directory.path)
            .replacingOccurrences(of: "@AUTH_ALGORITHM@", with: authAlgorithm)
            .replacingOccurrences(of: "@MODULES@", with: Self.modules ?? "")
        if !Self.hasIPv6Loopback {
            // Containers without IPv6: Kamailio would refuse to start on a [::1] listener.
            config = config.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.contains("[::1]") }.joined(separator: "\n")
        }
        let database = directory.appendingPathComponent("db")
        try FileManager.default.createDirectory(at: database, withIntermediateDirectories: true)
        for table in ["version", "presentity", "active_watchers", "watchers", "xcap", "pua"] {
            try FileManager.default.copyItem(
                atPath: "\(Self.dbTextTables)/\(table)", toPath: database.appendingPathComponent(table).path)
        }
        let configPath = directory.appendingPathComponent("kamailio.cfg").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        pid = try ChildProcess(
            [
                executable, "-f", configPath, "-w", directory.path, "-P",
                directory.appendingPathComponent("kamailio.pid").path,
                "-Y", directory.path, "-DD", "-E", "-m", "32", "-M", "4",
            ], output: directory.appendingPathComponent("kamailio.log").path, newProcessGroup: true
        ).pid
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if exited(pid) { break }
            if FileManager.default.fileExists(atPath: socketPath), (try? kamcmd("core.uptime")) != nil { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        let output = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        stop()
        throw HarnessError("kamailio did not come up within 10 s:\n\(output.suffix(2000))")
    }

    /// Stops Kamailio by PID: SIGTERM to the main process, SIGKILL to its process group after
    /// 5 s; removes the folder.
    func stop() {
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while !exited(pid), Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        kill(-pid, SIGKILL)
        _ = exited(pid)
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs `kamcmd -s unix:SOCK args...` with a 5 s bound and returns its output.
    func kamcmd(_ arguments: String...) throws -> String {
        guard let kamcmd = Self.kamcmd else { throw HarnessError("kamcmd is not installed") }
        let output = directory.appendingPathComponent("kamcmd-\(UInt32.random(in: 0...UInt32.max)).out").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let child = try ChildProcess([kamcmd, "-s", "unix:\(socketPath)"] + arguments, output: output).pid
        let deadline = Date().addingTimeInterval(5)
        var status: Int32 = 0
        while Date() < deadline {
            if waitpid(child, &status, WNOHANG) == child {
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                guard status == 0 else { throw HarnessError("kamcmd \(arguments) failed: \(text)") }
                return text
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        kill(child, SIGKILL)
        _ = waitpid(child, &status, 0)
        throw HarnessError("kamcmd \(arguments) timed out")
    }

    /// The `Address:` lines of `ul.dump`.
    func boundContacts() throws -> [String] {
        try kamcmd("ul.dump").split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("Address: ") ? String(trimmed.dropFirst(9)) : nil
        }
    }

    /// The full `ul.dump` text.
    func userLocationDump() throws -> String { try kamcmd("ul.dump") }

    /// How many requests of `method` from `user` the registrar's script saw.
    /// How many client transactions of `method` from `user` reached the registrar: requests are
    /// counted by CSeq, so a UDP retransmission (same CSeq) on a loaded machine is not a new one.
    func requestCount(method: String, user: String) -> Int {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let prefix = "NRTEST \(method) user=\(user) "
        let sequences = log.split(separator: "\n").filter { $0.contains(prefix) }.map { line in
            line.split(separator: " ").first { $0.hasPrefix("cseq=") }.map(String.init) ?? String(line)
        }
        return Set(sequences).count
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Whether `pid` has exited (and reaps it).
func exited(_ pid: pid_t) -> Bool {
    var status: Int32 = 0
    let result = waitpid(pid, &status, WNOHANG)
    return result == pid || result < 0
}

/// A port free for both UDP and TCP on 127.0.0.1 (checked by binding both), below Linux's
/// ephemeral range (32768–60999 by default): a socket that another test binds to port 0, or a
/// connect, cannot take it between this check and Kamailio's own bind.
func freePort() throws -> Int {
    for _ in 0..<50 {
        let candidate = Int.random(in: 20_000...32_767)
        if canBind(Int32(SOCK_DGRAM.rawValue), candidate) && canBind(Int32(SOCK_STREAM.rawValue), candidate) {
            return candidate
        }
    }
    throw HarnessError("no free port")
}

private func canBind(_ type: Int32, _ port: Int) -> Bool {
    let fd = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    } == 0
}
