import ChildProcesses
import Foundation
import Glibc
import NetworkLab
import ResilienceCore
import Testing

@testable import SIPPlugin

/// The Contact an account registers is reachable from any source, not only from the registrar
/// (a real Kamailio on loopback), over UDP and TCP: an OPTIONS straight to it is answered, a
/// flood at it is bounded, and after an address change the Contact names the new listener while
/// the old one is closed. The registrar's own flow works as before throughout.
@Suite(
    .serialized,
    .enabled(if: LabRegistrar.isInstalled, "Kamailio (binary, kamcmd, modules, db_text tables) missing: SKIPPED"),
    .timeLimit(.minutes(3))
)
struct ContactListenerTests {
    /// A plugin with one account registered at `kamailio` from `address`; its Contact.
    func registered(
        _ kamailio: LabRegistrar, transport: SIPTransportKind, user: String
    ) async throws -> (SIPPlugin, SIPAccount, String) {
        let account = SIPAccount(
            name: user, registrarHost: "127.0.0.1", registrarPort: kamailio.port, transport: transport, user: user,
            domain: "127.0.0.1", password: "secret-\(user)", expires: 300)
        let plugin = SIPPlugin(accounts: [account], logger: testLogger(user))
        try await plugin.perform(action(.register, account.registrationService), context: context())
        let contact = try #require(await plugin.agent(for: user)?.registrationStatus.contact)
        return (plugin, account, contact)
    }

    /// An OPTIONS to `contact` from a probe of its own: the answer and the probe's port.
    func probe(_ contact: String, transport: SIPTransportKind, within seconds: Double = 5) async throws -> (
        SIPMessage?, Int
    ) {
        if transport == .udp { return try await ContactProbe.optionsOverUDP(to: contact, within: seconds) }
        let (answer, port, _) = try await ContactProbe.optionsOverTCP(to: contact, within: seconds)
        return (answer, port)
    }

    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func anOptionsSentToTheContactFromAnotherSourceIsAnswered(transport: SIPTransportKind) async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("reach")
            let (plugin, account, contact) = try await registered(kamailio, transport: transport, user: user)
            let (answer, probePort) = try await probe(contact, transport: transport)
            let response = try #require(answer, "no answer from \(contact)")
            #expect(response.status == 200)
            #expect(response.headers["Allow"]?.contains("INVITE") == true)
            // The listener marked the request with where it came from (RFC 3581 §4), and the
            // answer carries that Via back.
            #expect(response.headers["Via"]?.contains(";rport=\(probePort)") == true, "\(response.headers)")
            // The registrar's flow goes on as before: a refresh crosses it.
            try await plugin.perform(action(.refreshRegistration, account.registrationService), context: context())
            #expect(try await kamailio.contacts() == [contact])
            #expect(kamailio.transactionCount(of: "REGISTER", from: user) == 3)  // 401, 200, refresh 200
            await plugin.agent(for: user)?.close()
        }
    }

    @Test func aDatagramFloodAtTheContactIsAnsweredAtABoundedRate() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("flood")
            let (plugin, account, contact) = try await registered(kamailio, transport: .udp, user: user)
            let (host, port) = try #require(ContactProbe.hostPort(of: contact))
            let flooder = try UDPTestPeer()
            let sent = 1_000
            let started = ContinuousClock.now
            let answered = await flooder.run { peer -> Int in
                for _ in 0..<sent {
                    let request = ContactProbe.options(to: contact, sentBy: "127.0.0.1:\(peer.port)")
                    peer.send(request.serialized(), to: ContactProbe.address(host, port))
                }
                var answers = 0
                while peer.receive(within: 1) != nil { answers += 1 }
                return answers
            }
            let elapsed = ContinuousClock.now - started
            let admission = ContactAdmission()
            let bound = admission.burst + Int((elapsed / .seconds(1)) * Double(admission.rate)) + 1
            #expect(answered > 0 && answered <= bound, "\(answered) answers in \(elapsed), bound \(bound)")
            let socket = try #require(await plugin.agent(for: user)?.transport?.sharedSocket)
            // The kernel drops what overflows the socket's buffer; of the rest the gate refused some.
            #expect(socket.gate.refused > 0)
            // The registrar's flow was not crowded out.
            try await plugin.perform(action(.refreshRegistration, account.registrationService), context: context())
            #expect(try await kamailio.contacts() == [contact])
            await plugin.agent(for: user)?.close()
        }
    }

    @Test func connectionsToTheContactAreCappedAndTheRestClosed() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("conns")
            let (plugin, account, contact) = try await registered(kamailio, transport: .tcp, user: user)
            let (host, port) = try #require(ContactProbe.hostPort(of: contact))
            let listener = try #require(await plugin.agent(for: user)?.transport?.listener)
            let attempts = ContactConnections.maximum + 6
            let closedByListener = await OffThePool.run {
                let connections = (0..<attempts).compactMap { _ in ContactProbe.connect(host, port) }
                defer { for fd in connections { close(fd) } }
                // A connection over the cap is closed at once: after a moment its read sees the end.
                usleep(500_000)
                var byte: UInt8 = 0
                return connections.filter { recv($0, &byte, 1, Int32(MSG_DONTWAIT)) == 0 }.count
            }
            #expect(closedByListener >= attempts - ContactConnections.maximum)
            // All from one source address: it keeps at most its own share, the oldest evicted.
            #expect(listener.connectionCount <= ContactConnections.perSource)
            #expect(listener.gate.refused >= attempts - ContactConnections.maximum)
            // Once they are gone, the Contact answers again and the registrar's flow went on.
            #expect(await eventually(within: .seconds(10)) { listener.connectionCount == 0 })
            let (answer, _) = try await probe(contact, transport: .tcp)
            #expect(answer?.status == 200)
            try await plugin.perform(action(.refreshRegistration, account.registrationService), context: context())
            await plugin.agent(for: user)?.close()
        }
    }

    /// A squatter holding every slot from many source addresses (each connection said something
    /// once, so none is closed as silent) does not shut the Contact: a stranger's OPTIONS gets
    /// its answer within 5 s, the listener closing the connection idle longest to make room.
    @Test func aSquatterHoldingEverySlotDoesNotStopALegitimateRequest() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("squat")
            let (plugin, _, contact) = try await registered(kamailio, transport: .tcp, user: user)
            let (host, port) = try #require(ContactProbe.hostPort(of: contact))
            let listener = try #require(await plugin.agent(for: user)?.transport?.listener)
            let sources = ContactConnections.maximum / 4
            let squatter = await OffThePool.run {
                (0..<ContactConnections.maximum).compactMap { index -> Int32? in
                    guard let fd = ContactProbe.connect(host, port, from: "127.0.1.\(1 + index % sources)") else {
                        return nil
                    }
                    let keepAlive: [UInt8] = Array("\r\n\r\n".utf8)
                    _ = keepAlive.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    return fd
                }
            }
            defer { for fd in squatter { close(fd) } }
            #expect(squatter.count == ContactConnections.maximum)
            #expect(await eventually(within: .seconds(30)) { listener.connectionCount == ContactConnections.maximum })
            let (answer, _, refused) = try await ContactProbe.optionsOverTCP(to: contact, within: 5)
            #expect(!refused && answer?.status == 200, "the Contact answered a stranger despite the squatter")
            #expect(listener.gate.refused >= 1, "a squatter's connection made room")
            await plugin.agent(for: user)?.close()
        }
    }

    /// A connection that sends nothing holds no slot for long: the listener closes it a few
    /// seconds after its accept (``ContactConnections/firstByteWait``), not after 120 s of idling.
    @Test func aConnectionThatSaysNothingIsClosedSoonAfterItsAccept() async throws {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("mute")
            let (plugin, _, contact) = try await registered(kamailio, transport: .tcp, user: user)
            let (host, port) = try #require(ContactProbe.hostPort(of: contact))
            let listener = try #require(await plugin.agent(for: user)?.transport?.listener)
            let fd = try #require(await OffThePool.run { ContactProbe.connect(host, port) })
            defer { close(fd) }
            #expect(await eventually(within: .seconds(30)) { listener.connectionCount == 1 })
            // Well under the 120 s idle timeout: only the first-byte wait can close it this soon.
            #expect(await eventually(within: .seconds(60)) { listener.connectionCount == 0 })
            let closed = await OffThePool.run { ContactProbe.receive(on: fd, within: 5).closed }
            #expect(closed, "the listener closed the silent connection")
            await plugin.agent(for: user)?.close()
        }
    }

    @Test(arguments: [SIPTransportKind.udp, .tcp])
    func afterAnAddressChangeTheContactNamesTheNewListenerAndTheOldIsClosed(transport: SIPTransportKind)
        async throws
    {
        try await withLoopbackRegistrar { kamailio in
            let user = uniqueUser("mover")
            let (plugin, account, old) = try await registered(kamailio, transport: transport, user: user)
            let moved = context("127.0.0.2")
            try await plugin.perform(action(.closeStaleTransports, account.registrationService), context: moved)
            try await plugin.perform(action(.register, account.registrationService), context: moved)
            let new = try #require(await plugin.agent(for: user)?.registrationStatus.contact)
            #expect(new.hasPrefix("sip:\(user)@127.0.0.2:"))
            #expect(try await kamailio.contacts().contains(new))
            let (answer, _) = try await probe(new, transport: transport)
            #expect(answer?.status == 200, "the new Contact \(new) answers")
            let (oldHost, oldPort) = try #require(ContactProbe.hostPort(of: old))
            if transport == .udp {
                let (stale, _) = try await probe(old, transport: .udp, within: 1)
                #expect(stale == nil, "nothing answers at the old Contact \(old)")
                // /proc/net/udp writes the address as the in-memory word in hex, as inet_addr gives it.
                let bound = String(format: " %08X:%04X ", inet_addr(oldHost), oldPort)
                let released = await eventually(within: .seconds(5)) {
                    !ChildProcess.contents(of: "/proc/net/udp").contains(bound)
                }
                #expect(released, "nothing is bound at \(old) any more")
            } else {
                let (_, _, refused) = try await ContactProbe.optionsOverTCP(to: old, within: 1)
                #expect(refused, "nothing listens at the old Contact \(old)")
            }
            await plugin.agent(for: user)?.close()
        }
    }
}
