import Foundation
import Glibc
import NetworkLab
import Testing

@testable import SIPPlugin

/// The lab's NAT against Kamailio's STUN answers on its SIP port: a client socket behind the
/// gateway learns the public address the registrar sees, and each NAT fault does to that address
/// what it says. One lab for every case (Kamailio starts once).
@Suite(
    .serialized,
    .enabled(if: NetworkLab.isSupported, "needs root and iproute2: SKIPPED"),
    .enabled(if: LabRegistrar.isInstalled, "needs kamailio: SKIPPED"),
    .timeLimit(.minutes(3)))
struct NATLabTests {
    /// One STUN Binding from `fd` to the registrar; the mapped address, or nil after `wait` seconds.
    static func binding(_ fd: Int32, wait: Double = 1.5) -> String? {
        let id = (0..<12).map { _ in UInt8.random(in: 0...255) }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = in_port_t(5060).bigEndian
        inet_pton(AF_INET, LabAddress.service4, &target.sin_addr)
        let request = STUNMessage.bindingRequest(transactionID: id)
        _ = withUnsafePointer(to: &target) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, request, request.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let deadline = Date().addingTimeInterval(wait)
        var buffer = [UInt8](repeating: 0, count: 1500)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0, let answer = STUNMessage.parseBindingAnswer(Array(buffer[0..<count])),
                answer.transactionID == id
            else { continue }
            return answer.mapped
        }
        return nil
    }

    /// A UDP socket in the client host bound to `port` on every address.
    static func socket(in lab: NetworkLab, host: LabHost, port: UInt16) async throws -> Int32 {
        let fd = try await lab.socket(in: host, domain: AF_INET, type: Int32(SOCK_DGRAM.rawValue))
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_port = port.bigEndian
        let bound = withUnsafePointer(to: &local) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(bound == 0, "bind: \(errno)")
        return fd
    }

    /// Endpoint-independent: the public address is the gateway's, the port the client's own; a
    /// rebinding moves it to another port; a reboot answers nothing while down, then from yet
    /// another port; mappings left idle vanish after the 3 s UDP timeout (per namespace sysctl).
    @Test func eachNATFaultDoesToThePublicAddressWhatItSays() async throws {
        try await withNetworkLab { lab in
            var options = RegistrarOptions()
            options.nat = RegistrarNAT(flowTimer: 2)
            let network = try await lab.addClientBehindNAT(options: options, nat: NATOptions(udpTimeout: .seconds(3)))
            let nat = try #require(network.nat)
            let fd = try await Self.socket(in: lab, host: network.client, port: 41_000)
            defer { close(fd) }
            let publicAddress = await lab.publicAddress(of: nat)
            var first: String?
            _ = await eventually(within: .seconds(10)) {
                first = Self.binding(fd, wait: 0.5)
                return first != nil
            }
            #expect(first == "\(publicAddress):41000", "Kamailio's STUN answer through the NAT")
            try await lab.inject(.natRebinding(nat))
            let rebound = Self.binding(fd)
            #expect(rebound != nil && rebound != first && rebound?.hasPrefix(publicAddress + ":") == true)
            #expect(try await !lab.udpMappings(of: nat).isEmpty)
            try await Task.sleep(for: .seconds(4.5))
            #expect(try await lab.udpMappings(of: nat).isEmpty, "a mapping idle past the UDP timeout")
            async let reboot = lab.inject(.natGatewayReboot(nat, for: .seconds(2)))
            try await Task.sleep(for: .milliseconds(500))
            #expect(Self.binding(fd, wait: 0.8) == nil, "the gateway forwards nothing while down")
            _ = try await reboot
            let afterReboot = Self.binding(fd)
            #expect(afterReboot != nil && afterReboot != rebound, "\(String(describing: afterReboot))")
        }
    }
}
