import Foundation
import NetworkLab

extension DaemonLab {
    /// Writes a `netres run` config for `user` (password `secret-USER`, hold-down 0, only `nrc0`,
    /// JSON log, control socket ``controlSocket(of:)``, state directory in the lab's folder; port
    /// 5060, left to its 5061 default over TLS) into the lab's folder and returns its path.
    /// `account` holds extra lines of the account (`subscriptions:` ...), indented by 4 spaces.
    func writeDaemonConfig(user: String, transport: String = "udp", account: [String] = []) throws -> String {
        try writeDaemonConfig(name: user, accounts: [(user, transport)], account: account)
    }

    /// ``writeDaemonConfig(user:transport:account:)`` with several accounts (user, transport), each
    /// with the lines of `account`; the control socket, output and file are named after `name`.
    func writeDaemonConfig(name: String, accounts: [(user: String, transport: String)], account: [String] = [])
        throws -> String
    {
        let path = directory + "/netres-\(name).yaml"
        let extra = account.map { "    " + $0 + "\n" }.joined()
        var text = """
            log-format: json
            control-socket: \(controlSocket(of: name))
            interfaces: [\(initial.interface)]
            hold-down: 0
            state-directory: \(directory)/state
            accounts:

            """
        for (user, transport) in accounts {
            text += """
                  - name: \(user)
                    registrar: \(registrarAddress)
                    \(transport == "tls" ? "# port: 5061 by default" : "port: \(registrar.port)")
                    transport: \(transport)
                    user: \(user)
                    domain: \(registrarAddress)
                    password: secret-\(user)

                """ + extra
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The control socket of the `netres run` of `user` (``writeDaemonConfig(user:transport:account:)``).
    func controlSocket(of user: String) -> String { directory + "/netres-\(user).sock" }

    /// Where the `netres run` of `user` writes its standard output and error.
    func clientOutput(of user: String) -> String { directory + "/netres-\(user).out" }

    /// One `action` line of a `netres run` JSON log.
    struct ActionLine {
        /// The trigger the action was decided on, e.g. `network.restored`.
        var event: String
        var service: String
        var action: String
        var attempt: Int
        var outcome: String
        var error: String?
    }

    /// The `kind: action` lines `netres run` of `user` has logged so far, in order.
    func actionLog(of user: String) -> [ActionLine] {
        let text = (try? String(contentsOfFile: clientOutput(of: user), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["kind"] as? String == "action", let service = object["service"] as? String,
                let action = object["action"] as? String, let outcome = object["outcome"] as? String
            else { return nil }
            return ActionLine(
                event: object["event"] as? String ?? "", service: service, action: action,
                attempt: object["attempt"] as? Int ?? 0, outcome: outcome,
                error: object["error"] as? String)
        }
    }
}
