import Foundation
import Glibc

extension LabRegistrar {
    /// Starts Kamailio on `127.0.0.1` (and `::1` when it can be bound) at `port`, or at a free one,
    /// for tests that need a real registrar but no namespaces (and no root).
    ///
    /// Its folder is `/tmp/netlab-<owner pid>-registrar-<random>`: a lab's garbage collection removes
    /// it, and the Kamailio running from it, once the owner is gone.
    public static func onLoopback(port: Int? = nil, options: RegistrarOptions = .init()) async throws -> LabRegistrar {
        let chosen = try port ?? LoopbackPort.free()
        guard (1...65_535).contains(chosen) else {
            throw NetworkLabError(.invalidRequest, "port \(chosen): want 1-65535")
        }
        let directory = "/tmp/\(LabOwnership.prefix)\(getpid())-registrar-\(UInt32.random(in: 0...UInt32.max))"
        let registrar = try LabRegistrar(
            placement: .loopback, address4: "127.0.0.1", address6: LoopbackPort.hasIPv6 ? "::1" : nil, port: chosen,
            directory: directory, options: options)
        try await registrar.start()
        return registrar
    }
}

/// Runs `body` with a registrar on loopback (``LabRegistrar/onLoopback(port:options:)``) and always
/// stops it and removes its folder, also when `body` throws.
public func withLoopbackRegistrar<T: Sendable>(
    port: Int? = nil, options: RegistrarOptions = .init(), _ body: (LabRegistrar) async throws -> T
) async throws -> T {
    let registrar = try await LabRegistrar.onLoopback(port: port, options: options)
    do {
        let result = try await body(registrar)
        await registrar.stop()
        return result
    } catch {
        await registrar.stop()
        throw error
    }
}

/// Ports on this machine's loopback, for servers a test starts there.
public enum LoopbackPort {
    /// A port free for both UDP and TCP on 127.0.0.1 (checked by binding both), below Linux's
    /// ephemeral range (32768–60999 by default), so a socket another test binds to port 0 cannot
    /// take it between this check and the server's own bind. At most 50 tries.
    ///
    /// `udpAbove` names the further UDP ports a server binds from this base, checked free too
    /// (sipp's `-mp BASE` binds the audio RTP socket at BASE and the video one at BASE + 2, and
    /// exits when either is taken); they stay below the ephemeral range as well.
    public static func free(udpAbove offsets: [Int] = []) throws -> Int {
        let highest = 32_767 - min(max(offsets.max() ?? 0, 0), 1_000)
        for _ in 0..<50 {
            let candidate = Int.random(in: 20_000...highest)
            if canBind(Int32(SOCK_DGRAM.rawValue), candidate) && canBind(Int32(SOCK_STREAM.rawValue), candidate)
                && offsets.allSatisfy({
                    (1...1_000).contains($0) && canBind(Int32(SOCK_DGRAM.rawValue), candidate + $0)
                })
            {
                return candidate
            }
        }
        throw NetworkLabError(.unsupported, "no free port on 127.0.0.1 after 50 tries")
    }

    /// Whether `::1` can be bound here (IPv6 may be disabled in containers).
    public static let hasIPv6: Bool = {
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

    private static func canBind(_ type: Int32, _ port: Int) -> Bool {
        let fd = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }
}
