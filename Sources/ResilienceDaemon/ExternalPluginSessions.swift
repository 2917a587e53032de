public import Logging
public import ResilienceCore

/// The control socket's sessions: the external plugin protocol (a first line that is a `hello`
/// message) and `events` (the event stream alone, for `netres ctl events`).
///
/// Invariants: a session's plugin connection and event subscription end with the session; a
/// session that sends ``sessionErrorLimit`` bad messages is closed; a message is answered only
/// when it asks for something (a command, a push) or is wrong (an `error` message).
public struct ExternalPluginSessions: Sendable {
    let externalPlugins: ExternalPluginHub
    let eventFeed: EventFeed
    let logger: Logger
    /// Answers a one-line control command.
    let handle: @Sendable (String) async -> String
    /// Carries out a push.
    let handlePush: @Sendable (Push) async -> String

    /// - Parameters:
    ///   - command: answers a one-line control command (`status --json`).
    ///   - push: carries out a push for an account and says how it went.
    public init(
        hub: ExternalPluginHub, logger: Logger, command: @escaping @Sendable (String) async -> String,
        push: @escaping @Sendable (Push) async -> String
    ) {
        self.init(hub: hub, feed: EventFeed(), logger: logger, command: command, push: push)
    }

    init(
        hub: ExternalPluginHub, feed: EventFeed, logger: Logger, command: @escaping @Sendable (String) async -> String,
        push: @escaping @Sendable (Push) async -> String
    ) {
        self.externalPlugins = hub
        self.eventFeed = feed
        self.logger = logger
        self.handle = command
        self.handlePush = push
    }

    /// What the control server calls for a line that opens a session.
    public var handler: ControlSessionHandler {
        ControlSessionHandler(
            opens: { line in
                let trimmed = line.trimmingPrefix(while: \.isWhitespace)
                return trimmed == "events" || ExternalPluginMessage.isHello(String(trimmed))
            },
            droppedLine: ExternalPluginLines.dropped,
            serve: { first, lines, session in await self.serveSession(first: first, lines: lines, session: session) })
    }

    /// The most protocol errors a session may make before it is closed.
    public static let sessionErrorLimit = 100

    /// Serves one session until the client closes it or the daemon shuts down.
    func serveSession(first: String, lines: ControlSessionLines, session: ControlSession) async {
        var connection: ExternalPluginHub.Connection?
        var subscription: Int?
        defer {
            if let connection { externalPlugins.disconnect(connection) }
            if let subscription { eventFeed.unsubscribe(subscription) }
        }
        if first.trimmingPrefix(while: \.isWhitespace) == "events" {
            subscription = eventFeed.subscribe(session)
            session.send(ExternalPluginLines.welcome(plugin: nil, accepted: [], refused: []))
        } else {
            do {
                guard case .hello(let hello) = try ExternalPluginMessage.parse(first) else { return }
                // Subscribed before the welcome: a client that has its welcome misses no event.
                if hello.events { subscription = eventFeed.subscribe(session) }
                if let name = hello.plugin {
                    let accepted = try externalPlugins.connect(plugin: name, hello: hello, send: session.send)
                    connection = accepted.connection
                    logger.info(
                        "external plugin connected",
                        metadata: [
                            "plugin": "\(name)", "services": "\(accepted.services.count)",
                            "peer": "\(session.peer.map(\.description) ?? "unknown")",
                        ])
                } else {
                    session.send(ExternalPluginLines.welcome(plugin: nil, accepted: [], refused: []))
                }
            } catch {
                session.send(ExternalPluginLines.error("\(error)"))
                return
            }
        }
        var errors = 0
        while let line = await lines.next() {
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            if let problem = await handleSessionLine(line, connection: connection, session: session) {
                errors += 1
                session.send(ExternalPluginLines.error(problem))
                if errors >= Self.sessionErrorLimit {
                    session.send(ExternalPluginLines.error("too many errors; closing"))
                    return
                }
            }
        }
    }

    /// Carries out one message of a session; returns what was wrong with it, if anything.
    private func handleSessionLine(
        _ line: String, connection: ExternalPluginHub.Connection?, session: ControlSession
    ) async -> String? {
        do {
            let message = try ExternalPluginMessage.parse(line)
            switch message {
            case .hello: return "type: hello comes once, first"
            case .command(let text):
                session.send(ExternalPluginLines.reply(await handle(text)))
                return nil
            case .push(let push):
                session.send(ExternalPluginLines.reply(await handlePush(push)))
                return nil
            default: break
            }
            guard let connection else { return "type: only a plugin (a hello with \"plugin\") sends this" }
            switch message {
            case .outcome(let id, let outcome): try externalPlugins.report(outcome, for: id, from: connection)
            case .serviceAdded(let service), .serviceChanged(let service):
                try externalPlugins.declare(service, from: connection)
            case .serviceRemoved(let id): try externalPlugins.end(id, from: connection)
            case .flowLost(let ids): try externalPlugins.flowLost(ids, from: connection)
            case .hello, .command, .push: break
            }
            return nil
        } catch {
            return "\(error)"
        }
    }
}
