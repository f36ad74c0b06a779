// The voice agent's recorder of one attendance of a room (when the room's recording is on): the
// caller's audio as the agent hears it (left) and the agent's as it sends it (right) on one
// wall-clock timeline, handed to the store's file writer a quarter of a second at a time, so the
// call is never held in memory. Recording trouble is logged and never stops the conversation.
import { type Logger } from '../../lib/logger';
import { type Models } from '../../db/models';
import { StereoTimeline } from '../../core/voice/recording-wav';
import { openVoiceRecordingFile, VOICE_RECORDING_FORMAT, type VoiceRecordingFileWriter, type VoiceRoomRecordingPlace } from '../../core/voice/recordings';

const WRITE_EVERY_MS = 250;

export class RoomRecorder {
  private readonly timeline: StereoTimeline;
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private failed = false;
  private closed = false;

  private constructor(
    private readonly writer: VoiceRecordingFileWriter,
    private readonly log: Logger,
    startedAt: number,
  ) {
    this.timeline = new StereoTimeline(VOICE_RECORDING_FORMAT.sampleRate, startedAt);
    this.timer = setInterval(() => this.flush(this.timeline.take()), WRITE_EVERY_MS);
  }

  /** Starts this attendance's file; null (logged) when the store refuses, and the call goes on unrecorded. */
  static async start(deps: { models: Models; logger: Logger; retentionDays: number }, place: VoiceRoomRecordingPlace): Promise<RoomRecorder | null> {
    const startedAt = new Date();
    try {
      const writer = await openVoiceRecordingFile(deps.models, place, { retentionDays: deps.retentionDays, now: startedAt });
      deps.logger.info({ objectIndex: writer.objectIndex }, 'recording the voice room');
      return new RoomRecorder(writer, deps.logger, startedAt.getTime());
    } catch (err) {
      deps.logger.error({ err }, 'could not start recording the voice room; the call goes on unrecorded');
      return null;
    }
  }

  /** A frame of the caller's audio, as it arrives. */
  caller(samples: Int16Array, sampleRate: number): void {
    if (!this.closed) this.timeline.caller(samples, sampleRate);
  }

  /** A frame of the agent's audio, as it is queued into its track. */
  agent(samples: Int16Array, sampleRate: number): void {
    if (!this.closed) this.timeline.agent(samples, sampleRate);
  }

  /** The agent's queued audio was dropped (barge-in): it was never heard, so it is not recorded. */
  agentCleared(): void {
    if (!this.closed) this.timeline.agentCleared();
  }

  private flush(samples: Int16Array): void {
    if (samples.length === 0 || this.failed) return;
    this.writing = this.writing.then(async () => {
      if (this.failed) return;
      try {
        if (!(await this.writer.write(samples))) this.log.warn('the voice room recording reached its size limit; the rest of the call is not recorded');
      } catch (err) {
        // What was stored stays; the room's close finishes the file from it.
        this.failed = true;
        this.log.error({ err }, 'could not store the voice room recording; the rest of the call is not recorded');
      }
    });
  }

  /** Stores the rest (up to now) and finishes the file: its header's sizes set, listed in the recording. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.flush(this.timeline.take(Date.now(), 0));
    await this.writing;
    if (this.failed) return;
    try {
      const file = await this.writer.close();
      this.log.info({ objectIndex: this.writer.objectIndex, bytes: file?.bytes ?? 0 }, 'voice room recording file closed');
    } catch (err) {
      this.log.error({ err }, 'could not close the voice room recording file; the room closing finishes it');
    }
  }
}
