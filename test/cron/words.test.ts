import { describe, expect, it } from "vitest";
import { describeSchedule } from "../../src/cron/words.js";

const words = (schedule: string, id = "news") => describeSchedule({ id, schedule });

describe("a cron schedule in words", () => {
  it.each([
    ["0 8 * * *", "at 08:00 every day"],
    ["*/15 * * * *", "every 15 minutes"],
    ["0 9 * * 1-5", "at 09:00 on Monday–Friday"],
    ["0 9 * * MON-FRI", "at 09:00 on Monday–Friday"],
    ["* * * * *", "every minute"],
    ["5 * * * *", "every hour at :05"],
    ["0 */2 * * *", "every 2 hours at :00"],
    ["0 9-17 * * 1-5", "every hour from 09:00 to 17:00 on Monday–Friday"],
    ["*/15 9-17 * * *", "every 15 minutes from 09:00 to 17:45"],
    ["* 9 * * *", "every minute from 09:00 to 09:59"],
    ["0 8 1 * *", "at 08:00 on the 1st of the month"],
    ["0 0 11-13,22 * *", "at 00:00 on the 11th, 12th, 13th and 22nd of the month"],
    ["0 8 1,15 * 1", "at 08:00 on the 1st and 15th of the month or on Monday"],
    ["0 8 * * 6,0", "at 08:00 on Saturday and Sunday"],
    ["0 12 * * 7", "at 12:00 on Sunday"],
    ["0 8 * * 1,3,5", "at 08:00 on Monday, Wednesday and Friday"],
    ["0 8 * * 5-7", "at 08:00 on Friday–Sunday"],
    ["0 0 * * 5#2", "at 00:00 on the second Friday of the month"],
    ["30 7,19 * 1,7 *", "at 07:30 and 19:30 every day in January and July"],
  ])("%s reads %s", (schedule, expected) => {
    expect(words(schedule)).toBe(expected);
  });

  it("says the minute and hour that H picks for this cron id", () => {
    const sentence = words("H H * * *");
    expect(sentence).toMatch(/^at \d\d:\d\d every day$/);
    expect(words("H H * * *")).toBe(sentence);
  });

  it("gives no words for what it cannot say exactly, so the expression is shown alone", () => {
    expect(words("0 0 L * *")).toBeNull();
    expect(words("7,9,11,13 1,5,8,14 * * *")).toBeNull();
  });
});
