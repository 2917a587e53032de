import ChildProcesses
import Foundation
import NetworkLab

/// SIP recovery time in a two-namespace lab (``SIPLab``): from the request that brings the client
/// link back up to the registrar confirming the re-REGISTER, for NetResilience (`netres run`)
/// and a peer client (baresip 1.0) doing the same kind of flaps and one address change, next to the
/// registrar's own REGISTER round trip (the floor) measured at the start of the same run.
///
/// How each instant is taken (all on this host's CLOCK_REALTIME, so they compare directly):
/// - start: read just before `ip link set nrc0 up` (or the address swap) is run;
/// - end: Kamailio's `$TV(Sn)` logged by the script right after `save("location")` sent the 200 OK
///   (`NRTEST REGISTERED`), so neither log polling nor log buffering enters the figure;
/// - floor: a capture on the client's veth (tcpdump, kernel timestamps) of sipp's authenticated
///   REGISTER and its 200 OK: one request/response on the wire, no client logic.
struct SIPRecoveryBenchmark {
    var floorSamples: Int
    var flaps: Int
    /// Flaps for baresip; nil leaves baresip out entirely (not started, no address change).
    var peerFlaps: Int?
    /// Address changes, alternating 198.18.1.2 → .3 → .2 …; each waits for every client.
    var addressChanges = 1
    /// When set, each address change is one `ip -batch` run fed through a FIFO: the add, this
    /// pause, then the delete and the route, so the delete lands a controlled time after the add
    /// (the default, three `ip` runs, leaves it to process start-up: ~3 ms idle, tens under load).
    var addressChangeGap: Duration?
    /// Records the wire and the netlink stream for profiling (see ``startCaptures(_:)``).
    var capture = false
    /// `netres run --log-level` (its diagnostics on standard error, into the same log); nil: default.
    var netresLogLevel: String?
    /// The `netres run` account's transport: udp, tcp or tls (then Kamailio's TLS listener with
    /// ``TestCertificates`` made for the run; a flap keeps the TLS connection, an address change
    /// needs a new handshake).
    var transport = "udp"
    var downSeconds = 3
    var peerBound: Double = 30
    var addressChangeBound: Double = 75

    func run() async throws {
        let tls = transport == "tls"
        try await SIPLab.with(
            tls: { directory in
                tls
                    ? try await TestCertificates(
                        folder: directory + "/tls", serverName: Self.tlsServerName, serverAddress: LabAddress.service4,
                        validity: .valid) : nil
            }
        ) { lab, certificates in
            let floor = try await measureFloor(lab)
            if capture { try await startCaptures(lab) }
            let netres = (user: "netres", name: "NetResilience (`netres run`, hold-down 0, \(transport.uppercased()))")
            let peer = (user: "peer", name: "baresip 1.0.0 (Debian)")
            try await startClients(lab, peer: peerFlaps != nil, caFile: certificates?.caFile)
            // NetResilience recovers in milliseconds; baresip is given `peerBound` per flap, so it
            // gets its own (usually shorter) series of the same flaps after NetResilience's.
            var results = try await runFaults(lab, clients: [netres], flaps: flaps)
            var clients = [netres]
            if let peerFlaps {
                results += try await runFaults(lab, clients: [peer], flaps: peerFlaps)
                clients.append(peer)
            }
            try await changeAddress(lab, clients: clients, into: &results)
            report(floor: floor, clients: results)
        }
    }

    /// For profiling: tcpdump on the registrar's end of the client link (it stays up while `nrc0`
    /// flaps, so one capture spans every flap; kernel timestamps of each REGISTER's arrival, i.e.
    /// when it left the client: a veth hop is µs) into `wire.txt`, and `ip -ts monitor` in the
    /// client host (when userspace can first read each link, address and route message) into
    /// `netlink.txt`. Both are stopped by the lab at the end.
    func startCaptures(_ lab: SIPLab) async throws {
        let wire = lab.directory + "/wire.txt"
        try await lab.start(
            in: lab.server,
            ["/usr/bin/tcpdump", "-i", lab.registrarInterface, "-tt", "-n", "-l", "-U", "-A", "udp port \(lab.port)"],
            output: wire)
        try await waitFor(seconds: 5) {
            ((try? String(contentsOfFile: wire, encoding: .utf8)) ?? "").contains("listening")
        }
        try await lab.start(
            in: lab.client, ["/usr/sbin/ip", "-ts", "monitor", "link", "address", "route"],
            output: lab.directory + "/netlink.txt")
    }

    /// The name in the run's server certificate, checked by the TLS account.
    static let tlsServerName = "registrar.test"

    // MARK: floor

    /// `floorSamples` sipp REGISTERs (challenge, then the authenticated one) from the client
    /// namespace at 10/s, captured on `nrc0`: the authenticated REGISTER → 200 OK gap of each.
    private func measureFloor(_ lab: SIPLab) async throws -> [Duration] {
        let dir = lab.directory
        try Self.sippScenario.write(toFile: dir + "/register.xml", atomically: true, encoding: .utf8)
        try "SEQUENTIAL\nfloor;[authentication username=floor password=secret-floor]\n"
            .write(toFile: dir + "/users.csv", atomically: true, encoding: .utf8)
        let capture = dir + "/floor.pcap.txt"
        let tcpdump = try await lab.start(
            in: lab.client,
            ["/usr/bin/tcpdump", "-i", lab.initial.interface, "-tt", "-n", "-l", "-U", "-A", "udp port 5070"],
            output: capture)
        try await waitFor(seconds: 5) {
            ((try? String(contentsOfFile: capture, encoding: .utf8)) ?? "").contains("listening")
        }
        let sipp = try await lab.start(
            in: lab.client,
            [
                "/usr/bin/sipp", "\(lab.registrarAddress):\(lab.port)", "-sf", dir + "/register.xml", "-inf",
                dir + "/users.csv", "-i", lab.initial.ipv4, "-p", "5070", "-m", "\(floorSamples)", "-r", "10",
                "-nostdin", "-timeout", "60s", "-timeout_error",
            ], output: dir + "/sipp.log")
        // sipp ends itself within its own 60 s timeout; the bound is a hang guard.
        _ = try await lab.waitForExit(sipp, within: .seconds(90))
        try await Task.sleep(for: .milliseconds(200))
        await lab.stop(tcpdump, signal: SIGINT)
        return Self.roundTrips(inCapture: (try? String(contentsOfFile: capture, encoding: .utf8)) ?? "")
    }

    /// Pairs each captured `CSeq: 2 REGISTER` request with the next `200` carrying that CSeq.
    static func roundTrips(inCapture text: String) -> [Duration] {
        var samples: [Duration] = []
        var sentAt: Double?
        var packet: (time: Double, body: String)?
        func close() {
            guard let current = packet, current.body.contains("CSeq: 2 REGISTER") else { return }
            if current.body.contains("REGISTER sip:") {
                sentAt = current.time
            } else if current.body.contains("SIP/2.0 200"), let start = sentAt {
                samples.append(.microseconds(Int64(((current.time - start) * 1e6).rounded())))
                sentAt = nil
            }
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let words = line.split(separator: " ", maxSplits: 2)
            if words.count == 3, words[1] == "IP", let time = Double(words[0]) {
                close()
                packet = (time, String(line))
            } else {
                packet?.body += "\n" + line
            }
        }
        close()
        return samples
    }

    static let sippScenario = """
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <scenario name="register-floor">
          <send retrans="500"><![CDATA[
        REGISTER sip:[remote_ip]:[remote_port] SIP/2.0
        Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
        From: <sip:[field0]@[remote_ip]>;tag=[call_number]
        To: <sip:[field0]@[remote_ip]>
        Call-ID: [call_id]
        CSeq: 1 REGISTER
        Contact: <sip:[field0]@[local_ip]:[local_port]>
        Max-Forwards: 70
        Expires: 600
        Content-Length: 0

          ]]></send>
          <recv response="401" auth="true"/>
          <send retrans="500"><![CDATA[
        REGISTER sip:[remote_ip]:[remote_port] SIP/2.0
        Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
        From: <sip:[field0]@[remote_ip]>;tag=[call_number]
        To: <sip:[field0]@[remote_ip]>
        Call-ID: [call_id]
        CSeq: 2 REGISTER
        Contact: <sip:[field0]@[local_ip]:[local_port]>
        [field1]
        Max-Forwards: 70
        Expires: 600
        Content-Length: 0

          ]]></send>
          <recv response="200"/>
        </scenario>

        """
}
