import Foundation
import NetworkLab

extension CallRecoveryBenchmark.Series {
    /// Counts the far end's 200 OKs to an INVITE whose CSeq no ACK carried.
    mutating func countUnacknowledged(far: LabSIPp) {
        let messages = far.messages()
        let acked = Set(messages.filter { !$0.sent && $0.method == "ACK" }.compactMap(\.cseq))
        unacknowledged =
            messages.filter {
                $0.sent && $0.status == 200 && $0.header("CSeq")?.hasSuffix("INVITE") == true
                    && !acked.contains($0.cseq ?? -1)
            }.count
    }

    /// For each flap window `[begins[i], begins[i+1])`: link-up is the first `wifi` line with
    /// `LOWER_UP` after one without it, the route the first `default via` after that; the end
    /// the far end's first 200 OK to an INVITE after link-up inside the window.
    mutating func collectFlaps(far: LabSIPp, begins: [Double], events: [NetlinkLine], interface: String) {
        let oks = far.messages().filter {
            $0.sent && $0.status == 200 && $0.header("CSeq")?.hasSuffix("INVITE") == true
        }
        for (start, end) in zip(begins, begins.dropFirst()) {
            let window = events.filter { $0.at >= start && $0.at < end }
            guard
                let down = window.firstIndex(where: {
                    $0.text.contains(" \(interface)") && !$0.text.contains("LOWER_UP")
                }),
                let up = window[down...].first(where: {
                    $0.text.contains(" \(interface)") && $0.text.contains("LOWER_UP")
                }),
                let ok = oks.first(where: { $0.at > up.at && $0.at < end })
            else {
                missing += 1
                continue
            }
            fromLinkUp.append(ok.at - up.at)
            if let route = window.first(where: { $0.at >= up.at && $0.text.hasPrefix("default via") }) {
                fromRoute.append(ok.at - route.at)
            }
        }
    }

    /// After an address change at `at` to `address`: the far end's 200 OK to the re-INVITE, and
    /// the first captured datagram to `address` at the port that re-INVITE offered.
    /// With `relay` (the media relay's address), media at the new address is the first datagram
    /// from the relay to it: the far end's re-INVITE names the relay's port, not ours.
    mutating func collectChange(far: LabSIPp, at: Double, address: String, packets: [RTPCapture], relay: String?) {
        let reinvite = far.messages().first { !$0.sent && $0.method == "INVITE" && $0.at > at }
        let ok = far.messages().first {
            $0.sent && $0.status == 200 && $0.at > at && $0.header("CSeq")?.hasSuffix("INVITE") == true
        }
        guard let reinvite, let ok else {
            changesMissing += 1
            return
        }
        changeToOK.append(ok.at - at)
        let port = reinvite.bodyLine("m=audio ")?.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        let first = packets.first { packet in
            guard packet.at > at else { return false }
            if let relay { return packet.source.hasPrefix(relay + ".") && packet.destination.hasPrefix(address + ".") }
            return port.map { packet.destination == "\(address).\($0)" } ?? false
        }
        if let first { changeToRTP.append(first.at - at) }
    }
}

/// One line of `ip -ts monitor`: `[2026-11-24T05:10:00.123456] TEXT`.
struct NetlinkLine {
    var at: Double
    var text: String

    /// The lines of `file` (at most 1,000,000), stamps read as local time like `ip` writes them.
    static func parse(file: String) -> [NetlinkLine] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .current
        formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss"
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").prefix(1_000_000).compactMap { line in
            guard line.hasPrefix("["), let close = line.firstIndex(of: "]") else { return nil }
            let stamp = line[line.index(after: line.startIndex)..<close]
            let parts = stamp.split(separator: ".")
            guard let whole = parts.first, let date = formatter.date(from: String(whole)) else { return nil }
            let fraction = parts.dropFirst().first.flatMap { Double("0." + $0) } ?? 0
            let rest = line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)
            return NetlinkLine(at: date.timeIntervalSince1970 + fraction, text: rest)
        }
    }
}

/// One datagram of `tcpdump -tt -n`: `1764000000.123456 IP SRC.PORT > DST.PORT: UDP, length N`.
struct RTPCapture {
    var at: Double
    var source: String
    var destination: String

    static func parse(file: String) -> [RTPCapture] {
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").prefix(2_000_000).compactMap { line in
            let words = line.split(separator: " ", maxSplits: 5)
            guard words.count >= 5, words[1] == "IP", let at = Double(words[0]) else { return nil }
            return RTPCapture(at: at, source: String(words[2]), destination: String(words[4].dropLast()))
        }
    }
}

extension CallRecoveryBenchmark {
    /// Prints the Markdown that goes into BENCHMARKS.md (ms; ratios to the floor's p50).
    func report(floor: [Duration], clients: [Series]) {
        let floorStats = LatencyStats(floor)
        func stats(_ seconds: [Double]) -> LatencyStats {
            LatencyStats(seconds.map { .microseconds(Int64(($0 * 1e6).rounded())) })
        }
        func cells(_ values: [Double]) -> String {
            let s = stats(values)
            guard s.count > 0 else { return "n/a | n/a | n/a" }
            return "\(format1(s.p50 / 1000)) | \(format1(s.p99 / 1000)) | \(format1(s.p50 / floorStats.p50))×"
        }
        var flapRows: [String] = []
        var changeRows: [String] = []
        for client in clients {
            let total = client.fromLinkUp.count + client.missing
            flapRows.append(
                "| \(client.name) | \(total) | \(client.fromLinkUp.count) | \(cells(client.fromLinkUp)) | "
                    + "\(cells(client.fromRoute)) | \(client.unacknowledged) |")
            let changes = client.changeToOK.count + client.changesMissing
            changeRows.append(
                "| \(client.name) | \(changes) | \(client.changeToOK.count) | \(cells(client.changeToOK)) | "
                    + "\(cells(client.changeToRTP)) |")
        }
        let lasted = clients.map {
            "\($0.name) \($0.lasted ? "yes" : "**no**: its rows measured a call that had ended")"
        }
        .joined(separator: "; ")
        print(
            """
            ### Floor: the registrar's REGISTER round trip (µs, sipp in the phone host)

            | measurement | n | p50 | p99 | max | vs floor |
            |---|---|---|---|---|---|
            \(floorStats.row("sipp authenticated REGISTER → 200 OK", floor: nil))

            ### An established call across a link flap (admin-down \(downFor); ms to the far end's 200 OK to the re-INVITE)\(relay ? "; media through rtpengine" : "")

            | client | flaps | re-INVITEd | from link-up p50 | p99 | p50 vs floor | from default route p50 | p99 | p50 vs floor | 200 OKs never ACKed (whole run) |
            |---|---|---|---|---|---|---|---|---|---|
            \(flapRows.joined(separator: "\n"))

            ### An established call across an address change (make-before-break; ms from the new address)\(relay ? "; media through rtpengine (RTP: its first datagram to the new address)" : "")

            | client | changes | re-INVITEd | to 200 OK p50 | p99 | p50 vs floor | to RTP at the new address p50 | p99 | p50 vs floor |
            |---|---|---|---|---|---|---|---|---|
            \(changeRows.joined(separator: "\n"))

            Calls up for the whole run (no BYE reached their far end): \(lasted).
            """)
    }

    /// The far end's 200 OK to a re-INVITE (the same SDP, version 2), then back to label 1.
    static let reinviteAnswer = """
          <send next="1"><![CDATA[

        SIP/2.0 200 OK
        [last_Via:]
        [last_From:]
        [last_To:]
        [last_Call-ID:]
        [last_CSeq:]
        Contact: <sip:far@[local_ip]:[local_port]>
        Content-Type: application/sdp
        Content-Length: [len]

        v=0
        o=far 1000 2 IN IP[local_ip_type] [local_ip]
        s=-
        c=IN IP[media_ip_type] [media_ip]
        t=0 0
        m=audio [media_port] RTP/AVP 0
        a=rtpmap:0 PCMU/8000
        a=sendrecv

          ]]></send>
        """

    /// The far end for both clients: answers the INVITE (record-routed), then any number of
    /// re-INVITEs until the BYE or sipp's timeout; after each ACK it sends RTP (sip-tester's
    /// g711a.pcap) to the offered address. A re-INVITE that comes before the ACK of the previous
    /// 200 is answered too (``CallRecoveryBenchmark/Series`` counts the 200s never ACKed), so
    /// one lost ACK does not end the series.
    static let farEndScenario = """
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <scenario name="far-end-loop">
          <recv request="INVITE"/>
          <send><![CDATA[

        SIP/2.0 200 OK
        [last_Via:]
        [last_From:]
        [last_To:];tag=[pid]far[call_number]
        [last_Call-ID:]
        [last_CSeq:]
        [last_Record-Route:]
        Contact: <sip:far@[local_ip]:[local_port]>
        Content-Type: application/sdp
        Content-Length: [len]

        v=0
        o=far 1000 1 IN IP[local_ip_type] [local_ip]
        s=-
        c=IN IP[media_ip_type] [media_ip]
        t=0 0
        m=audio [media_port] RTP/AVP 0
        a=rtpmap:0 PCMU/8000
        a=sendrecv

          ]]></send>
          <label id="1"/>
          <recv request="ACK" optional="true" crlf="true" next="2"/>
          <recv request="BYE" optional="true" next="9"/>
          <recv request="INVITE"/>
        \(reinviteAnswer)
          <label id="2"/>
          <nop><action><exec play_pcap_audio="/usr/share/sip-tester/g711a.pcap"/></action></nop>
          <recv request="BYE" optional="true" next="9"/>
          <recv request="INVITE"/>
        \(reinviteAnswer)
          <label id="9"/>
          <send><![CDATA[

        SIP/2.0 200 OK
        [last_Via:]
        [last_From:]
        [last_To:]
        [last_Call-ID:]
        [last_CSeq:]
        Content-Length: 0

          ]]></send>
        </scenario>

        """
}
