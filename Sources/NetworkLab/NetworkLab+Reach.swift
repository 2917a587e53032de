import Foundation

/// What came of a call or a MESSAGE sipp sent to an account through the lab's registrar
/// (``NetworkLab/call(_:through:from:port:mediaPort:within:)``,
/// ``NetworkLab/message(_:text:through:from:port:within:)``): each field is the time from the
/// request to the witness, nil when the witness never came within the bound.
public struct LabReach: Hashable, Sendable {
    public var account: String
    /// A call: the 180 Ringing reached the caller.
    public var rung: Duration?
    /// A call: its 200 OK reached the caller (sipp ACKs it, and hangs up 0.5 s later).
    public var answered: Duration?
    /// A MESSAGE: the registrar's own answer (202 Accepted: stored while the account slept; 200:
    /// relayed at once), nil when it answered neither.
    public var accepted: Int?
    /// A MESSAGE: the registrar relayed it to the account's Contact and the client answered 2xx
    /// (the registrar's `DELIVERED` line; only a push proxy logs it, ``RegistrarOptions/pushService``).
    public var delivered: Duration?
}

extension NetworkLab {
    /// sipp in `host` calls `account` through `registrar` (as a caller elsewhere would: the
    /// registrar holds the INVITE and pushes when the account sleeps, ``RegistrarOptions/pushService``),
    /// and the lab's timeline records whether it was rung and answered.
    ///
    /// Invariants: returns by `bound` after the INVITE (then 10 s for the ACK and the BYE at most);
    /// sipp ends by its own timeout in any case and the lab stops it at shutdown. A call not
    /// answered is not cancelled: the registrar's transaction timer ends it.
    /// - Parameters:
    ///   - account: the called user (the Request-URI's user part).
    ///   - registrar: the registrar the INVITE goes through.
    ///   - host: the host sipp runs in.
    ///   - port: sipp's SIP port in `host` (one per concurrent caller), 1024–65000.
    ///   - mediaPort: its RTP port.
    ///   - bound: how long the caller waits for the 180 and the 200 (1 s … ``longestFault``).
    public func call(
        _ account: String, through registrar: LabRegistrar, from host: LabHost, port: Int = 5080,
        mediaPort: Int = 16_100, within bound: Duration = .seconds(20)
    ) async throws -> LabReach {
        let bound = min(max(bound, .seconds(1)), Self.longestFault)
        let caller = try await startReach(
            Self.callScenario(waiting: bound), named: "call", account: account, through: registrar, from: host,
            port: port, mediaPort: mediaPort, within: bound + .seconds(10))
        var reach = LabReach(account: account)
        let deadline = ContinuousClock.now + bound
        while ContinuousClock.now < deadline, reach.answered == nil {
            let messages = caller.messages()
            if let invite = messages.first(where: { $0.sent && $0.method == "INVITE" }) {
                let since = { (reply: SIPpMessage) in Duration.milliseconds(Int64((reply.at - invite.at) * 1000)) }
                reach.rung = messages.first { !$0.sent && $0.status == 180 }.map(since)
                reach.answered = messages.first {
                    !$0.sent && $0.status == 200 && $0.header("CSeq")?.hasSuffix("INVITE") == true
                }.map(since)
            }
            if reach.answered == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        record(
            "call \(account): " + Self.describe(rung: reach.rung, answered: reach.answered, bound: bound),
            backend: .sipp)
        if reach.answered != nil { _ = await caller.exitCode(within: .seconds(10)) }
        return reach
    }

    /// sipp in `host` sends a MESSAGE with `text` to `account` through `registrar`; the lab's
    /// timeline records the registrar's answer and whether the client got it (see ``LabReach``).
    ///
    /// Invariants: returns by `bound` after the MESSAGE; `text` is at most 200 characters of
    /// printable ASCII (anything else is replaced by `?`).
    public func message(
        _ account: String, text: String = "a message from the lab", through registrar: LabRegistrar,
        from host: LabHost, port: Int = 5080, within bound: Duration = .seconds(20)
    ) async throws -> LabReach {
        let bound = min(max(bound, .seconds(1)), Self.longestFault)
        let body = String(text.unicodeScalars.prefix(200).map { (32..<127).contains($0.value) ? Character($0) : "?" })
        let sentAt = realtime()
        let sender = try await startReach(
            Self.messageScenario(body: body), named: "message", account: account, through: registrar, from: host,
            port: port, mediaPort: port + 10_000, within: bound)
        var reach = LabReach(account: account)
        let deadline = ContinuousClock.now + bound
        while ContinuousClock.now < deadline, reach.delivered == nil {
            reach.accepted =
                reach.accepted ?? sender.messages().first { !$0.sent && [200, 202].contains($0.status) }?.status
            let delivered = registrar.requests().first {
                $0.kind == "DELIVERED" && $0.fields["to"] == account && $0.at >= sentAt
                    && ($0.fields["status"]?.hasPrefix("2") ?? false)
            }
            reach.delivered = delivered.map { .milliseconds(Int64(($0.at - sentAt) * 1000)) }
            if reach.delivered == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let answer =
            reach.accepted.map { $0 == 202 ? "stored by the registrar (202)" : "accepted (200)" } ?? "not accepted"
        let fate =
            reach.delivered.map { "delivered to the client after \(Self.seconds($0))" }
            ?? "not delivered within \(Self.seconds(bound))"
        record("message \(account): \(answer), \(fate)", backend: .sipp)
        return reach
    }

    /// Runs `argv` in `host` (``run(in:_:timeout:)``) as a step of a scenario, e.g.
    /// `netres ctl state suspended`, and records `what` in the timeline with its outcome (the
    /// first line of its output or error, escaped); the output, nil when it failed.
    @discardableResult
    public func runStep(
        _ what: String, in host: LabHost, _ argv: [String], timeout: Duration = .seconds(10)
    ) async -> String? {
        do {
            let output = try await run(in: host, argv, timeout: timeout)
            let first = output.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            record("\(what): \(LabText.quoted(first))", backend: .hostCommand)
            return output
        } catch {
            record("\(what): failed: \(LabText.quoted("\(error)"))", backend: .hostCommand)
            return nil
        }
    }

    private func startReach(
        _ scenario: String, named name: String, account: String, through registrar: LabRegistrar, from host: LabHost,
        port: Int, mediaPort: Int, within bound: Duration
    ) async throws -> LabSIPp {
        guard (1...64).contains(account.count),
            account.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else { throw error(.invalidRequest, "account \(LabText.quoted(account)): want 1-64 of A-Za-z0-9._-") }
        let file = directory + "/\(name)-\(port).xml"
        try scenario.write(toFile: file, atomically: true, encoding: .utf8)
        return try await startSIPp(
            in: host, scenario: file, address: registrar.address, port: port, mediaPort: mediaPort,
            remote: "\(registrar.address):\(registrar.port)", arguments: ["-s", account], timeout: bound)
    }

    static func describe(rung: Duration?, answered: Duration?, bound: Duration) -> String {
        switch (rung, answered) {
        case (let rung?, let answered?): "rung (180) after \(seconds(rung)), answered (200) after \(seconds(answered))"
        case (let rung?, nil): "rung (180) after \(seconds(rung)), not answered within \(seconds(bound))"
        case (nil, let answered?): "answered (200) after \(seconds(answered)) without a 180"
        case (nil, nil): "not rung within \(seconds(bound))"
        }
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.3f s", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}

extension FaultBackend {
    /// A command a scenario ran in a lab host (``NetworkLab/runStep(_:in:_:timeout:)``).
    public static let hostCommand = FaultBackend(rawValue: "command")
}
