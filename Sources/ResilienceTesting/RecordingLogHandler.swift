public import Logging
import Synchronization

/// A `LogHandler` that keeps every record, for tests that assert on what was logged.
///
/// Invariants: records are kept in the order they were logged, with the logger's metadata
/// merged under the call's; all copies of a handler (a `Logger` is a value) share one
/// ``LogRecords`` store.
///
/// ```swift
/// let records = LogRecords()
/// let logger = Logger(label: "test") { _ in RecordingLogHandler(records) }
/// ```
public struct RecordingLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace
    public let records: LogRecords

    public init(_ records: LogRecords) { self.records = records }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, call in call }
        records.append(LogRecords.Record(level: event.level, message: "\(event.message)", metadata: merged))
    }
}

/// What a ``RecordingLogHandler`` saw.
public final class LogRecords: Sendable {
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: Logger.Metadata

        /// The record as one line: message, then `key=value` in key order.
        public var line: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }
    }

    private let storage = Mutex<[Record]>([])

    public init() {}

    public var all: [Record] { storage.withLock { $0 } }

    /// The records whose message is `message`.
    public func named(_ message: String) -> [Record] { all.filter { $0.message == message } }

    func append(_ record: Record) { storage.withLock { $0.append(record) } }
}
