import ChildProcesses
import Foundation
import ResilienceDaemon
import Synchronization
import Testing

/// The control socket checks who is calling (`SO_PEERCRED`), caps its connections and closes
/// idle ones: real sockets, a real second user (`nobody`, through `setpriv`).
@Suite(.timeLimit(.minutes(3)))
struct ControlServerSecurityTests {
    /// A scratch folder holding the socket, removed at the end.
    final class Scratch: Sendable {
        let directory = "/tmp/netres-ctl-sec-\(UUID().uuidString)"
        var socket: String { directory + "/control.sock" }
        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Runs `server` while `body` runs, then cancels it.
    func serving(_ server: ControlServer, _ body: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { group.cancelAll() }
            _ = try await ask("status", server.path)
            try await body()
        }
    }

    /// One `ControlClient` exchange on a thread of its own (it blocks), retried while the socket
    /// does not exist yet (bounded: 2 s).
    func ask(_ line: String, _ socket: String) async throws -> String {
        for _ in 0..<200 {
            let reply = await OffThePool.run { try? ControlClient.send(line, socket: socket, timeoutSeconds: 10) }
            if let reply { return reply }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw DaemonError("no reply from \(socket)")
    }

    static let setpriv = "/usr/bin/setpriv"
    static let python = "/usr/bin/python3"

    @Test(
        .enabled(
            if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv)
                && FileManager.default.isExecutableFile(atPath: python), "needs root, setpriv and /usr/bin/python3"))
    func anotherUserIsRefusedEvenWhenTheSocketModeWasLoosened() async throws {
        let scratch = Scratch()
        let calls = Atomic<Int>(0)
        let server = ControlServer(path: scratch.socket) { line in
            calls.add(1, ordering: .relaxed)
            return "ok \(line)\n"
        }
        try await serving(server) {
            let before = calls.load(ordering: .relaxed)
            // An administrator's mistake: anyone may now reach the socket file.
            #expect(chmod(scratch.directory, 0o755) == 0 && chmod(scratch.socket, 0o666) == 0)
            let output = scratch.directory + "/nobody.out"
            let client = """
                import socket, sys
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(10)
                s.connect(sys.argv[1])
                s.sendall(b"state background\\n")
                s.shutdown(socket.SHUT_WR)
                reply = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk: break
                    reply += chunk
                sys.stdout.write(reply.decode())
                """
            let child = try ChildProcess(
                [
                    Self.setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", Self.python, "-c", client,
                    scratch.socket,
                ], output: output, truncate: true)
            var exited = false
            for _ in 0..<1000 where !exited {  // hang guard: 20 s
                exited = child.hasExited()
                if !exited { try await Task.sleep(for: .milliseconds(20)) }
            }
            if !exited {
                kill(child.pid, SIGKILL)
                _ = await OffThePool.run { child.waitForExit() }
            }
            let reply = try String(contentsOfFile: output, encoding: .utf8)
            #expect(reply.contains("error: refused: uid 65534 is not root or the daemon's user"), "\(reply)")
            #expect(calls.load(ordering: .relaxed) == before, "the refused request never reached the handler")
            #expect(try await ask("status", scratch.socket) == "ok status\n", "root still gets in")
        }
    }

    /// The connections the server holds on `socket`: this process's descriptors whose row in
    /// `/proc/net/unix` carries the socket's path (an accepted Unix socket takes its listener's
    /// address; a client's has none), the listener (flag `__SO_ACCEPTCON`, 0x10000) aside. Not
    /// the process's descriptor count: suites running beside this one in the same process open
    /// and close descriptors of their own meanwhile.
    func serverConnections(on socket: String) -> Int {
        let ours = ChildProcess.socketInodes(of: "self")
        return ChildProcess.contents(of: "/proc/net/unix").split(separator: "\n").prefix(200_000).filter { line in
            let fields = line.split(separator: " ")
            return fields.count >= 8 && fields[7] == socket && fields[3] != "00010000"
                && ours.contains(String(fields[6]))
        }.count
    }

    /// Ten times the cap, in the test process whose event loops other suites share; the 2,000
    /// of the issue run against the built daemon in `ControlSocketFaultTests`.
    static let crowd = 600

    @Test func manyIdleClientsNeitherExhaustDescriptorsNorLockOutCtl() async throws {
        OpenFileLimit.raiseToHard()
        let scratch = Scratch()
        let server = ControlServer(path: scratch.socket, limits: .init(maxConnections: 64)) { "ok \($0)\n" }
        try await serving(server) {
            let clients = await OffThePool.run {
                (0..<Self.crowd).compactMap { _ in try? ControlClient.connect(socket: scratch.socket, timeoutSeconds: 5)
                }
            }
            defer { for fd in clients { close(fd) } }
            #expect(clients.count == Self.crowd)
            #expect(try await ask("status", scratch.socket) == "ok status\n")
            // Without the cap the server would hold one descriptor per client (600).
            var held = serverConnections(on: scratch.socket)
            // Evictions close asynchronously: a hang guard of 20 s, over at the first count under.
            for _ in 0..<1_000 where held > 150 {
                try await Task.sleep(for: .milliseconds(20))
                held = serverConnections(on: scratch.socket)
            }
            #expect(held <= 150, "the server holds \(held) descriptors for \(Self.crowd) clients")
            #expect(held > 0, "the count sees the connections the server keeps under its cap")
        }
    }

    /// Connects `count` clients 100 ms apart on a thread of its own, then hands them to `body`
    /// there (blocking calls), and closes them.
    func withClients<T: Sendable>(_ count: Int, _ socket: String, _ body: @escaping @Sendable ([Int32]) -> T) async -> T
    {
        await OffThePool.run {
            let fds = (0..<count).compactMap { _ -> Int32? in
                defer { usleep(100_000) }
                return try? ControlClient.connect(socket: socket, timeoutSeconds: 10)
            }
            let result = body(fds)
            for fd in fds { close(fd) }
            return result
        }
    }

    @Test func atTheCapTheClientIdleTheLongestMakesRoom() async throws {
        let scratch = Scratch()
        let server = ControlServer(path: scratch.socket, limits: .init(maxConnections: 2)) { "ok \($0)\n" }
        try await serving(server) {
            let (first, others) = await withClients(3, scratch.socket) { fds in
                var byte: UInt8 = 0
                let first = recv(fds[0], &byte, 1, 0)  // blocks until closed (10 s receive timeout)
                let others = fds.dropFirst().map { recv($0, &byte, 1, Int32(MSG_DONTWAIT)) == -1 && errno == EAGAIN }
                return (first, others)
            }
            #expect(first == 0, "the oldest idle client was closed")
            #expect(others == [true, true], "the newer ones stay open")
        }
    }

    @Test func aClientThatSendsNothingIsClosedAfterTheIdleTimeout() async throws {
        let scratch = Scratch()
        // 3 s, not less: the later `ask` must be read within the idle timeout on a loaded machine.
        let server = ControlServer(path: scratch.socket, limits: .init(idleTimeout: .seconds(3))) { "ok \($0)\n" }
        try await serving(server) {
            let closed = await withClients(1, scratch.socket) { fds in
                var byte: UInt8 = 0
                return recv(fds[0], &byte, 1, 0) == 0  // well before the 10 s receive timeout
            }
            let reply = try await ask("status", scratch.socket)
            #expect(closed)
            #expect(reply == "ok status\n")
        }
    }
}
