import Foundation
import NetworkLab
import Testing

/// Issue 25 against the built `netres run` and Kamailio in namespaces: hostile INVITEs relayed
/// over a TCP account's own flow cost that flow nothing.
@Suite(.serialized, .needsNamespaces, .enabled(if: LabRegistrar.isInstalled, "needs kamailio"), .timeLimit(.minutes(3)))
struct HostileCallFaultTests {
    /// A sipp UAC scenario: an INVITE to `[service]` carrying `lines` filler header lines (more
    /// than the parser's 256), which must be answered 400; the 400 is ACKed.
    static func manyHeaders(_ lines: Int) -> String {
        let filler = (0..<lines).map { "      X-Filler-\($0): hostile" }.joined(separator: "\n")
        return """
            <?xml version="1.0" encoding="ISO-8859-1" ?>
            <scenario name="uac-many-headers">
              <send>
                <![CDATA[

                  INVITE sip:[service]@[remote_ip] SIP/2.0
                  Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
                  From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]many[call_number]
                  To: <sip:[service]@[remote_ip]>
                  Call-ID: [call_id]
                  CSeq: 1 INVITE
                  Max-Forwards: 70
                  Contact: <sip:caller@[local_ip]:[local_port]>
            \(filler)
                  Content-Length: 0

                ]]>
              </send>
              <recv response="100" optional="true"/>
              <recv response="400" timeout="5000"/>
              <send>
                <![CDATA[

                  ACK sip:[service]@[remote_ip] SIP/2.0
                  [last_Via:]
                  From: <sip:caller@[local_ip]:[local_port]>;tag=[pid]many[call_number]
                  To: <sip:[service]@[remote_ip]>[peer_tag_param]
                  Call-ID: [call_id]
                  CSeq: 1 ACK
                  Max-Forwards: 70
                  Content-Length: 0

                ]]>
              </send>
            </scenario>

            """
    }

    /// Issue 25: 20 INVITEs with more than 256 header lines, relayed over a TCP account's
    /// connection, closed it 20 times (20 re-REGISTERs and re-SUBSCRIBEs). Each is now answered
    /// 400 and the connection stays: no REGISTER after the first binding.
    @Test func twentyInvitesWithTooManyHeaderLinesAreAnswered400AndTheTCPFlowStays() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab, transport: "tcp")
            let registers = f.registrar.transactionCount(of: "REGISTER", from: CallFaultLab.user)
            let scenario = lab.directory + "/uac-many-headers.xml"
            try Self.manyHeaders(300).write(toFile: scenario, atomically: true, encoding: .utf8)
            let caller = try await lab.startSIPp(
                in: f.server, scenario: scenario, address: f.registrar.address, port: 5080, mediaPort: 16_100,
                remote: "\(f.registrar.address):\(f.registrar.port)",
                arguments: ["-s", CallFaultLab.user, "-m", "20"])
            #expect(await caller.exitCode(within: .seconds(60)) == 0, "sipp: \(caller.diagnostics())")
            let answered = caller.messages().filter { !$0.sent && $0.startLine.hasPrefix("SIP/2.0 400") }
            #expect(answered.count == 20, "each INVITE answered 400: \(caller.diagnostics())")
            #expect(await f.clientIsRunning(), "netres: \(f.log())")
            #expect(
                f.registrar.transactionCount(of: "REGISTER", from: CallFaultLab.user) == registers,
                "no re-REGISTER: the flow stayed; netres: \(f.log())")
            #expect(f.log().contains("sip.refused-message"), "netres itself refused them: \(f.log())")
            #expect(!f.log().contains("sip.stream-closed"), "\(f.log())")
            #expect(try await f.boundOnceAtCurrentAddress())
        }
    }

    /// Issue 25: ~6,000 forged INVITEs were answered late or not at all and gave ~9,000 log
    /// lines. Through Kamailio, 80 INVITEs in under a second to an account that rejects calls:
    /// every one gets its final answer (603 when admitted, 500 or 503 from the door), and the
    /// daemon logs at most the throttle's 30 `call alerting` lines although more calls rang.
    @Test func aFloodOfForgedInvitesThroughTheProxyIsAnsweredAndTheLogStaysBounded() async throws {
        try await withNetworkLab { lab in
            let f = try await CallFaultLab(lab, incomingCalls: "reject")
            let caller = try await lab.startSIPp(
                in: f.server, scenario: "\(CallFaultLab.scenarios)/uac-flood.xml", address: f.registrar.address,
                port: 5080, mediaPort: 16_100, remote: "\(f.registrar.address):\(f.registrar.port)",
                arguments: ["-s", CallFaultLab.user, "-m", "80", "-r", "200"])
            #expect(await caller.exitCode(within: .seconds(60)) == 0, "sipp: \(caller.diagnostics())")
            let finals = caller.messages().filter { !$0.sent && $0.startLine.hasPrefix("SIP/2.0 ") }
                .map { $0.startLine.split(separator: " ")[1] }.filter { $0 != "100" && $0 != "180" }
            let rejected = finals.filter { $0 == "603" }.count
            let refused = finals.filter { $0 == "500" || $0 == "503" || $0 == "486" }.count
            #expect(rejected + refused == 80, "every INVITE answered: \(finals)")
            #expect(refused > 0, "the door refused some: \(finals)")
            #expect(await f.clientIsRunning(), "netres: \(f.log())")
            let log = (try? String(contentsOfFile: f.logPath, encoding: .utf8)) ?? ""
            let incoming = log.split(separator: "\n").filter { $0.contains(" call alerting ") }.count
            #expect(rejected > 30 && incoming <= 30, "\(rejected) calls rang, \(incoming) logged")
            #expect(try await f.boundOnceAtCurrentAddress())
        }
    }
}
