import Foundation
import NetworkLab

/// Call recovery in a NetworkLab lab: an established call of `netres run` (placed with
/// `netres ctl call`) and one of baresip 1.0 (dialled through its `ctrl_tcp`), each to its own
/// sipp far end behind Kamailio, across the same carrier flaps and address changes, next to the
/// registrar's REGISTER round trip (the floor) measured at the start of the same run. A flap is
/// the phone's link admin-down for `downFor`, then up with its default routes put back (the
/// kernel drops them on admin-down), so both the link's and the route's netlink messages exist.
///
/// How each instant is taken (all on this host's CLOCK_REALTIME):
/// - link-up and the default route: `ip -ts monitor link address route` in the phone host, the
///   instant it read the kernel's message (µs after the kernel sent it, measured on this machine kind);
/// - the far end's 200 OK to a re-INVITE: sipp's message log stamp when it sent it;
/// - RTP at the new address: tcpdump in the phone host (kernel stamps), first datagram to the
///   re-offered address and port after the change;
/// - floor: sipp in the phone host registering through the same link and registrar,
///   authenticated REGISTER sent → 200 OK received, both from sipp's message log stamps (the same
///   clock and the same kind of stamp as the 200 OK above).
struct CallRecoveryBenchmark {
    var flaps = 30
    var addressChanges = 2
    var floorSamples = 30
    var peer = true
    /// Whether calls' media goes through rtpengine beside the registrar (``RegistrarOptions/mediaRelay``).
    var relay = false
    var downFor = Duration.seconds(3)
    /// How long a client is given for one re-INVITE after a flap (netres) or a change (both).
    var netresBound = 10.0
    var peerBound = 75.0

    /// One client's recoveries, in seconds from the start instant.
    struct Series {
        var name: String
        var fromLinkUp: [Double] = []
        var fromRoute: [Double] = []
        var missing = 0
        var changeToOK: [Double] = []
        var changeToRTP: [Double] = []
        var changesMissing = 0
        /// 200 OKs to a re-INVITE the client never ACKed (RFC 3261 §13.2.2.4 requires one each).
        var unacknowledged = 0
        /// Whether the call was still up when the run ended: its far end received no BYE. A
        /// client whose call ended early measured nothing after that (the report says so).
        var lasted = true
    }

    func run() async throws {
        try await withNetworkLab { lab in
            let phone = try await lab.addHost("phone")
            let server = try await lab.addHost("server")
            let wifi = try await lab.connect(phone, to: server, as: "wifi")
            var options = RegistrarOptions()
            options.mediaRelay = relay
            let registrar = try await lab.startRegistrar(in: server, options: options)
            let dir = lab.directory
            try Self.farEndScenario.write(toFile: dir + "/far.xml", atomically: true, encoding: .utf8)
            try await lab.spawn(
                in: phone, ["ip", "-ts", "monitor", "link", "address", "route"], output: dir + "/nl.txt")
            try await lab.spawn(
                in: phone,
                ["tcpdump", "-i", "wifi", "-tt", "-n", "-l", "-U", "udp portrange 1024-65535 and not port 5060"],
                output: dir + "/rtp.txt")
            let floor = try await measureFloor(
                lab, phone: phone, address: await lab.addresses(of: wifi).ipv4, registrar: registrar)
            let netresFar = try await lab.startSIPp(
                in: server, scenario: dir + "/far.xml", address: registrar.address, port: 5070, mediaPort: 16_000,
                timeout: .seconds(600))
            let peerFar = try await lab.startSIPp(
                in: server, scenario: dir + "/far.xml", address: registrar.address, port: 5072, mediaPort: 16_200,
                timeout: .seconds(600))
            var clients: [(far: LabSIPp, series: Series)] = [
                (netresFar, Series(name: "NetResilience (`netres run`, hold-down 0, UDP)"))
            ]
            try await startNetres(lab, phone: phone, registrar: registrar, calling: netresFar)
            if peer {
                try await startBaresip(lab, phone: phone, registrar: registrar, calling: peerFar)
                clients.append((peerFar, Series(name: "baresip 1.0.0 (Debian)")))
            }
            var flapBegins: [Double] = []
            for index in 0..<flaps {
                let began = realtime()
                flapBegins.append(began)
                try await lab.inject(.adminDown(wifi, for: downFor))
                let netresDone = await eventually(within: .seconds(Int64(netresBound))) {
                    Self.reinviteOK(netresFar, after: began) != nil
                }
                try await Task.sleep(for: .milliseconds(500))
                log("flap \(index): netres \(netresDone ? "re-INVITEd" : "none")")
            }
            let events = NetlinkLine.parse(file: dir + "/nl.txt")
            for index in clients.indices {
                clients[index].series.collectFlaps(
                    far: clients[index].far, begins: flapBegins + [realtime()], events: events, interface: "wifi")
            }
            for change in 0..<addressChanges {
                let before = realtime()
                try await lab.inject(.addressChange(wifi, .makeBeforeBreak))
                let new = await lab.addresses(of: wifi).ipv4
                for (index, client) in clients.enumerated() {
                    let bound = index == 0 ? netresBound : peerBound
                    _ = await eventually(within: .seconds(Int64(bound)), every: .milliseconds(200)) {
                        Self.reinviteOK(client.far, after: before) != nil
                    }
                }
                try await Task.sleep(for: .seconds(2))
                let lines = NetlinkLine.parse(file: dir + "/nl.txt")
                let changeAt = lines.first { $0.at > before && $0.text.contains("inet \(new)/") }?.at ?? before
                let packets = RTPCapture.parse(file: dir + "/rtp.txt")
                for index in clients.indices {
                    clients[index].series.collectChange(
                        far: clients[index].far, at: changeAt, address: new, packets: packets,
                        relay: relay ? registrar.address : nil)
                }
                log("address change \(change) to \(new)")
            }
            for index in clients.indices {
                clients[index].series.countUnacknowledged(far: clients[index].far)
                clients[index].series.lasted = clients[index].far.received("BYE").isEmpty
            }
            report(floor: floor, clients: clients.map(\.series))
            FileHandle.standardError.write(Data("logs: \(dir) (removed with the lab)\n".utf8))
        }
    }

    /// The first 200 OK to an INVITE the far end sent after `instant` (after the call is up,
    /// every INVITE is a re-INVITE).
    static func reinviteOK(_ far: LabSIPp, after instant: Double) -> SIPpMessage? {
        far.messages().first {
            $0.sent && $0.status == 200 && $0.at > instant && $0.header("CSeq")?.hasSuffix("INVITE") == true
        }
    }

    func log(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}
