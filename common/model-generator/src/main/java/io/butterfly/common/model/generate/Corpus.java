package io.butterfly.common.model.generate;

/** A small built-in English text the generated tokenizer's BPE merges are learned from (original prose). */
final class Corpus {

    static final String TEXT = """
            The butterfly is an insect with large, colourful wings. It begins life as an egg on a leaf, and the egg \
            hatches into a caterpillar. The caterpillar eats and grows for several weeks, and then it forms a \
            chrysalis. Inside the chrysalis the body of the young insect changes, and after a while a butterfly comes \
            out, dries its wings in the sun and flies away. There are many kinds of butterflies in the world, and some \
            of them travel thousands of miles every year.

            Once upon a time there was a little town by the river. The people of the town worked in the fields during \
            the day and told stories in the evening. One morning a young girl found a small boat on the bank of the \
            river. She looked at the boat for a long time, and then she said to her brother, "Let us see where the \
            river goes." They took some bread and water, and they went down the river together. They saw birds and \
            trees, old houses and new bridges, and at night they slept under the stars.

            Computers are machines that follow instructions. A program is a list of instructions written in a language \
            that the computer can understand. When you write a program, you describe the problem, you think about the \
            data, and you decide what the computer should do with it. Good programs are simple, clear and easy to \
            change. A model that predicts the next word in a sentence learns from a very large amount of text, and it \
            can be split across several machines so that each machine runs only a part of the network.

            The weather today is warm and sunny, with a light wind from the west. Tomorrow there will be clouds in the \
            morning and some rain in the afternoon. The temperature will fall in the evening, so take a coat if you go \
            out. Next week should be dry and bright again, which is good news for farmers and for people who want to \
            spend time in the garden or walk in the hills.

            What is the capital of France? The capital of France is Paris. What is the largest planet in the solar \
            system? The largest planet is Jupiter. How many days are there in a year? There are three hundred and \
            sixty five days in a year, and one more day in a leap year. Where does the sun rise? The sun rises in the \
            east and sets in the west. Why is the sky blue? Because the air scatters blue light more than red light.

            I think that we should meet on Monday at ten o'clock. If you can't come, please let me know, and we will \
            find another time. We'll talk about the plan for the next month, the work that has been done, and the \
            things that still need to be done. It's important that everyone has a chance to speak, so bring your \
            questions and your ideas. Thank you for your help, and I'm looking forward to seeing you there.

            In the beginning the house was quiet. Then the children came home from school, the dog started to bark, \
            and the kitchen was full of noise and the smell of fresh bread. Their mother asked them about their day, \
            and their father made tea. After dinner they read books, played games and talked until it was time to go \
            to bed. The next day everything started again, and the house was never quiet for very long.

            Numbers such as 1, 2, 3, 10, 42, 100, 2024 and 3.14 appear in text as well as words. Lists, dates and \
            prices are common: the meeting is on 12 May, the ticket costs 25 dollars, and the train leaves at 7:45. \
            Questions, answers, names, places, colours, animals, food and drink, work and play, the sea and the \
            mountains: all of these are things people write about every day, in letters, in books and on the web.
            """;

    private Corpus() {
    }
}
